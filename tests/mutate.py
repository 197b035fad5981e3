"""`make mutate MODULE=agentcore/hooks/guard.py TESTS="tests/test_guard.py ..."`: mutation testing of one module.

mutmut (3.x) plants one small change at a time in the module (a flipped comparison, another constant, a dropped
call) and runs the module's own tests against each; a change no test notices is a survivor, a missing assertion.
mutmut over cosmic-ray and pytest-gremlins: it selects, for each mutant, only the tests that run the mutated
function (measured once), forks a warmed-up pytest for each, and keeps its results so a second run only tries what
changed, which is what makes a module's run feasible on two cores.

The run happens in a copy of the project in a temporary folder, so nothing is written into the working tree; the
kill rate is printed, and each survivor's diff with `--show`. Exit code: 0, whatever the rate (a report, not a gate).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("agentcore", "tests", "ui", "views", "app.py", ".streamlit")


def config(module: str, tests: list[str], children: int) -> str:
    lines = [
        "[tool.mutmut]",
        'source_paths = ["agentcore"]',
        f"only_mutate = [{json.dumps(module)}]",
        "mutate_only_covered_lines = true",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist", "-x", "-q"]',
        f"max_children = {children}",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="the module to mutate, e.g. agentcore/hooks/guard.py")
    parser.add_argument("tests", nargs="+", help="its own tests, e.g. tests/test_guard.py")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 2, help="mutants tried at once")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    args = parser.parse_args()
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent))
    if mutmut is None:
        print("mutate: mutmut is not installed: pip install -e '.[test]'", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="agentcore-mutate-") as tmp:
        work = Path(tmp)
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, work / name, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
            elif source.exists():
                shutil.copy2(source, work / name)
        pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
        (work / "pyproject.toml").write_text(pyproject + "\n" + config(args.module, args.tests, args.children))
        env = {**os.environ, "PYTHONPATH": str(work / "mutants")}
        subprocess.run([mutmut, "run", "--max-children", str(args.children)], cwd=work, env=env, check=False)
        subprocess.run([mutmut, "export-cicd-stats"], cwd=work, env=env, check=False, capture_output=True)
        stats_file = work / "mutants" / "mutmut-cicd-stats.json"
        stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
        killed, survived = stats.get("killed", 0), stats.get("survived", 0)
        untested = stats.get("no_tests", 0)
        tried = killed + survived
        rate = f"{100 * killed / tried:.0f}%" if tried else "n/a"
        print(f"{args.module}: {killed} of {tried} mutants killed ({rate}); {survived} survived; {untested} untested")
        if args.show and survived:
            listed = subprocess.run([mutmut, "results"], cwd=work, env=env, capture_output=True, text=True).stdout
            for line in listed.splitlines():
                name = line.split(":")[0].strip()
                if name and "survived" in line:
                    shown = subprocess.run([mutmut, "show", name], cwd=work, env=env, capture_output=True, text=True)
                    print(shown.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
