"""Mutation testing, one module at a time, with pytest-gremlins: each module's code is changed in small ways
(a comparison flipped, a boundary moved, a return value dropped, ...) and the module's own tests are run against
each change; a change no test notices is a survivor, a behaviour no test holds.

    python bench/mutate.py guard            # one target, by its name below
    python bench/mutate.py                  # every target
    python bench/mutate.py --list           # the targets, their modules and their tests

pytest-gremlins was chosen over mutmut and cosmic-ray: it is a pytest plugin that instruments the code once and
switches each mutation on by an environment variable (no copy of the tree, which mutmut 3 needs and which an
editable install defeats), selects for each mutation only the tests whose coverage reaches it, and runs on two
cores in minutes. Its results per target are written to coverage/gremlins/<target>.json; the survivors each
target keeps on purpose, and why, are listed in docs/mutation.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "coverage" / "gremlins"

# each target: the modules changed, and the tests that hold them (fast tests only: what the fast loop runs)
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "hooks": (
        [
            "agentcore/hooks/protocol.py",
            "agentcore/hooks/chain.py",
            "agentcore/hooks/context_policies.py",
            "agentcore/hooks/examples.py",
        ],
        [
            "test_hooks.py",
            "test_hook_chain.py",
            "test_meetings.py",
            "test_hostile_round3.py",
            "test_policies.py",
            "test_pinned_hooks.py",
            "test_app_hooks.py",
        ],
    ),
    "guard": (["agentcore/hooks/guard.py"], ["test_guard.py", "test_meetings.py", "test_hook_chain.py", "test_cli.py"]),
    "breakpoints": (
        ["agentcore/hooks/breakpoints.py", "agentcore/hooks/specs.py"],
        ["test_breakpoints.py", "test_meetings.py", "test_app_breakpoints.py", "test_hostile_round3.py"],
    ),
    "mocks": (
        ["agentcore/hooks/mocks.py"],
        ["test_breakpoints.py", "test_meetings.py", "test_pinned_hooks.py", "test_app_breakpoints.py"],
    ),
    "request": (
        ["agentcore/request.py"],
        [
            "test_model_rules.py",
            "test_sdk_bodies.py",
            "test_loop.py",
            "test_thinking_prefix.py",
            "test_catalogue.py",
            "test_reasoning.py",
            "test_provider_limits.py",
            "test_request.py",
            "test_policies.py",
        ],
    ),
    "importer": (
        ["agentcore/telemetry/importer.py", "agentcore/telemetry/spans.py"],
        [
            "test_telemetry.py",
            "test_telemetry_values.py",
            "test_import.py",
            "test_hostile_round3.py",
            "test_import_rules.py",
        ],
    ),
    "exports": (
        ["agentcore/exports.py"],
        ["test_exports.py", "test_hostile_round3.py", "test_annotations.py", "test_pinned.py", "test_hook_chain.py"],
    ),
    # where a server's key may go, and who reaches a header-trusting server
    "keys": (["agentcore/providers/keys.py"], ["test_key_gate.py"]),
    "proxy": (["agentcore/store/access.py"], ["test_proxy_trust.py", "test_class_access.py", "test_owners.py"]),
    # one way to name an extension
    "registry": (["agentcore/registry.py"], ["test_registry.py", "test_scanners.py", "test_hooks.py"]),
    # a run's figures, the library's statistics
    "figures": (["agentcore/store/figures.py"], ["test_stats.py", "test_dashboard_page.py"]),
    # the credential detectors
    "detectors": (["agentcore/secrets/detectors.py"], ["test_secret_detectors.py", "test_sessions.py"]),
    # repeated trials, the runner's matrix and its scoreboard
    "trials": (
        ["agentcore/testing/trials.py", "agentcore/testing/runner.py", "agentcore/testing/scoreboard.py"],
        ["test_trials.py", "test_pinned.py", "test_tests_page.py", "test_trial_verdicts.py", "test_trial_rules.py"],
    ),
    # experiments: a matrix kept as a record of the library
    "experiments": (
        ["agentcore/store/experiments.py", "agentcore/testing/experiments.py"],
        ["test_trials.py", "test_experiment_rules.py"],
    ),
    # which step broke a run: forks before each step, their pass rates, the step to blame
    "blame": (["agentcore/testing/blame.py"], ["test_blame.py", "test_blame_cli.py", "test_blame_chance.py"]),
    # LLM judges: the judge checks of pinned tests, their recorded verdicts, judges as scanners, agreement with people
    "judges": (
        ["agentcore/testing/judges.py", "agentcore/testing/agreement.py"],
        ["test_judges.py", "test_judge_scan.py", "test_agreement.py", "test_judges_page.py"],
    ),
    # simulated users: the simulator, its fidelity rules, replayed conversations, conversations compared
    "users": (
        ["agentcore/testing/users.py", "ui/compare_users.py"],
        [
            "test_simulated_users.py",
            "test_user_fidelity.py",
            "test_cli_users.py",
            "test_conversation_view.py",
            "test_compare_users.py",
            "test_compare_users_page.py",
            "test_fidelity_judge.py",
            "test_user_rules.py",
        ],
    ),
    # Compare, from the first step or from step k
    "compare": (
        ["agentcore/compare.py"],
        ["test_compare.py", "test_compare_from.py", "test_compare_page.py", "test_compare_rules.py"],
    ),
    # the library's readers: statistics, scanners, and what each step cost
    "library": (
        ["agentcore/store/stats.py", "agentcore/store/scanners.py", "agentcore/accounting.py"],
        [
            "test_stats.py",
            "test_scanners.py",
            "test_accounting.py",
            "test_cost_page.py",
            "test_library_rules.py",
            "test_accounting_rules.py",
        ],
    ),
    # other agents' sessions read as runs, and the ATIF export
    "sessions": (
        [
            "agentcore/sessions/atif.py",
            "agentcore/sessions/atif_export.py",
            "agentcore/sessions/builder.py",
            "agentcore/sessions/claude_code.py",
            "agentcore/sessions/codex.py",
        ],
        [
            "test_sessions.py",
            "test_compaction.py",
            "test_codex_usage.py",
            "test_session_limits.py",
            "test_atif_rules.py",
            "test_builder_rules.py",
            "test_codex_rules.py",
            "test_claude_code_rules.py",
        ],
    ),
    # the MCP runs server: its arguments, limits, tools, their groups and the context they share
    "runs-server": (
        [
            "agentcore/runs_server/args.py",
            "agentcore/runs_server/limits.py",
            "agentcore/runs_server/tools.py",
            "agentcore/runs_server/groups.py",
            "agentcore/runs_server/context.py",
        ],
        ["test_mcp_runs_server.py", "test_mcp_shared.py", "test_runs_server_rules.py"],
    ),
    # a tool call: its rules, and where it runs (the kept workers, the main thread's timer, worker processes)
    "tools": (
        ["agentcore/tools.py", "agentcore/workers.py"],
        [
            "test_tools.py",
            "test_tool_time_limits.py",
            "test_tool_pool.py",
            "test_tool_isolation.py",
            "test_tool_rules.py",
        ],
    ),
    # the class page's rows and flags
    "class": (["ui/classroom.py"], ["test_class_page.py", "test_class_access.py"]),
    # what the playground's live region reads after a Step
    "announce": (["ui/announcement.py"], ["test_announcement.py", "test_playground_output_limit.py"]),
    # the recording proxy: its dialects, runs, holds, the HTTP side and the control of held calls
    "recording-proxy": (
        [
            "agentcore/proxy/dialects.py",
            "agentcore/proxy/edits.py",
            "agentcore/proxy/recorder.py",
            "agentcore/proxy/holds.py",
            "agentcore/proxy/handler.py",
            "agentcore/proxy/server.py",
            "agentcore/proxy/control.py",
            "agentcore/store/exchanges.py",
            "ui/held_view.py",
            "ui/held_messages.py",
            "ui/message_editor.py",
        ],
        [
            "test_proxy_openai.py",
            "test_proxy_anthropic.py",
            "test_proxy_ollama.py",
            "test_proxy_pydantic_ai.py",
            "test_proxy_safety.py",
            "test_proxy_holds.py",
            "test_proxy_app.py",
            "test_proxy_edits.py",
            "test_proxy_runs.py",
            "test_proxy_bytes.py",
            "test_proxy_surfaces.py",
            "test_exchanges.py",
        ],
    ),
}

# seconds one change's tests may take before it is a timeout. The plugin's own limit is 30 s, and it counts a timeout
# as caught only when the same tests, unchanged, finish in half of it; the targets that hold app tests (AppTest,
# pinned-test files) take longer than that unchanged on two cores, and their changes went unmeasured. A change whose
# tests finish is never slowed by the limit; only one that hangs waits it out.
MUTANT_TIMEOUT = 150


def test_path(name: str) -> str:
    """Where a test module named by its file name lives: the tests are in folders by area, each name once."""
    found = sorted((ROOT / "tests").glob(f"*/{name}"))
    if len(found) != 1:
        sys.exit(f"mutate: {len(found)} test modules are named {name} under tests/ (one expected)")
    return str(found[0].relative_to(ROOT))


def run_target(name: str, workers: int) -> dict:
    modules, tests = TARGETS[name]
    report = OUT / f"{name}.json"
    work = OUT / name  # the plugin's HTML report, a folder a target
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}  # each of the many pytest processes reads compiled code
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", "-p", "no:langsmith_plugin",
        "-o", "addopts=",
        "-m", "(not slow or long) and not browser and not bench",  # long: slow only by its time
        "--gremlins", f"--gremlin-targets={','.join(modules)}", "--gremlin-report=json",
        f"--gremlin-workers={workers}", f"--gremlins-html-dir={work}",
        f"--gremlin-mutant-timeout={MUTANT_TIMEOUT}",
        *(test_path(t) for t in tests),
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    written = OUT / "gremlins.json"  # the plugin writes its JSON here whatever the HTML folder: one target at a time
    if not written.exists():
        sys.exit(f"mutate {name}: pytest-gremlins wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}")
    written.replace(report)
    data = json.loads(report.read_text())
    data["seconds"] = round(took)
    report.write_text(json.dumps(data, indent=1))
    return data


def show(name: str, data: dict) -> None:
    s = data["summary"]
    killed = s["zapped"] + s["timeout"]
    rate = 100 * killed / s["total"] if s["total"] else 100.0
    unmeasured = s["error"]  # the plugin's "error": a timeout whose tests were too slow unchanged, or no test ran
    print(
        f"{name}: {killed}/{s['total']} killed ({rate:.1f}%), {s['survived']} survived, "
        f"{unmeasured} not measured, in {data['seconds']} s"
    )
    ordered = sorted(data["results"], key=lambda r: (r["file_path"], r["line_number"]))
    for status, said in (("survived", "survived"), ("error", "not measured")):
        for r in (r for r in ordered if r["status"] == status):
            path = Path(r["file_path"]).relative_to(ROOT)
            why = (r.get("error_output") or "").split(":")[0] if status == "error" else r["operator"]
            print(f"  {said} {path}:{r['line_number']} {r['description']} ({why})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", choices=[[], *TARGETS], metavar="TARGET", help=", ".join(TARGETS))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--list", action="store_true", help="the targets, their modules and their tests")
    args = parser.parse_args()
    if args.list:
        for name, (modules, tests) in TARGETS.items():
            print(f"{name}: {' '.join(modules)}\n  tests: {' '.join(tests)}")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.targets or TARGETS:
        show(name, run_target(name, args.workers))


if __name__ == "__main__":
    main()
