"""One way to name an extension: every registry agentcore has, the one lookup, and the rule that code is loaded
only from an installed module its operator named, never from a path, a file or a remote client."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

import agentcore
from agentcore import Run, RunConfig, transcript
from agentcore.cli.main import main
from agentcore.errors import UsageError
from agentcore.hooks.examples import HOOKS, NamedHook, check_hook_names
from agentcore.providers import REGISTRY, create_provider, get_info
from agentcore.registry import Registry, load_attribute
from agentcore.store.scanners import BUILTINS, resolve_scanner

# every extension point, and a user's entry of each kind as a module:attribute
POINTS: dict[str, tuple[Registry, str]] = {
    "provider": (REGISTRY, "agentcore_user_ext:EchoProvider"),
    "hook": (HOOKS, "agentcore_user_ext:shout"),
    "scanner": (BUILTINS, "agentcore_user_ext:every_step"),
}
USER_MODULE = '''
from agentcore.hooks.examples import NamedHook
from agentcore.providers.scripted import ScriptedProvider
from agentcore.store.scanners import Finding


class EchoProvider(ScriptedProvider):
    """A provider of the user's own."""


def _loud(request, run):
    return None


shout = NamedHook("before_model", _loud, "a hook of the user's own")


def every_step(run):
    """A scanner of the user's own."""
    return [Finding(n, "seen", "a step") for n in range(1, len(run.steps) + 1)]
'''


def _registries() -> dict[str, Registry]:
    """Every Registry a module of agentcore holds, found by walking the package."""
    found = {}
    root = Path(agentcore.__file__).parent
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        if name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # an optional part not installed here: CI installs every one
            pytest.skip(f"{name} cannot be imported here: {exc}")
        for attribute, value in vars(module).items():
            if isinstance(value, Registry) and value.__module__ != "agentcore.registry":
                found[f"{name}:{attribute}"] = value
            elif isinstance(value, Registry):
                found[f"{value.kind}"] = value
    return found


@pytest.mark.long  # over a second on two cores: left out of the fast subset, measured by make mutate
def test_every_registry_is_a_named_extension_point():
    kinds = {r.kind for r in _registries().values()}
    assert kinds == set(POINTS), f"an extension point this test does not name: {sorted(kinds - set(POINTS))}"
    assert all(POINTS[k][0].kind == k for k in POINTS)
    assert all(len(r) == len(list(r)) > 0 for r, _ in POINTS.values())


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A module of the user's, importable as an installed one would be (on the interpreter's path)."""
    (tmp_path / "agentcore_user_ext.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("agentcore_user_ext", None)
    for registry, target in POINTS.values():
        registry._entries.pop(target, None)


@pytest.mark.parametrize("kind", sorted(POINTS))
def test_a_name_from_a_file_a_page_or_a_client_never_loads_code(kind, user_module):
    registry, target = POINTS[kind]
    with pytest.raises(UsageError, match="code is loaded only when whoever runs agentcore names it"):
        registry.resolve(target)  # code=False: what a test file, a stored run, a page or an MCP client says
    assert "agentcore_user_ext" not in sys.modules and target not in registry
    with pytest.raises(UsageError, match=f"unknown {kind} 'nothing'"):
        registry.resolve("nothing", code=True)
    with pytest.raises(UsageError, match="code is loaded only when"):
        registry.check([next(iter(registry)), target])  # a check names registered entries unless told otherwise
    assert "agentcore_user_ext" not in sys.modules


@pytest.mark.parametrize("kind", sorted(POINTS))
def test_the_operators_module_attribute_loads_from_an_installed_module_and_is_registered(kind, user_module):
    registry, target = POINTS[kind]
    entry = registry.resolve(target, code=True)
    assert registry[target] is entry and registry.resolve(target) is entry  # named again: found, no code loaded


@pytest.mark.parametrize(
    "target",
    [
        "/tmp/evil.py:run",
        "../evil:run",
        "./evil:run",
        "evil/mod:run",
        ".relative:run",
        "os.path:join:more",
        "evil:",
        ":run",
        "evil:__class__.__mro__[1]",
        "agentcore_user_ext_missing:run",
    ],
)
def test_a_path_a_relative_name_or_a_module_not_installed_is_refused_in_one_line(target, tmp_path, monkeypatch):
    (tmp_path / "evil.py").write_text("raise SystemExit('loaded')\n")
    monkeypatch.chdir(tmp_path)  # beside the user, not installed: never found by adding the folder to the path
    before = list(sys.path)
    with pytest.raises(UsageError) as refused:
        load_attribute(target, "scanner")
    said = str(refused.value)
    assert "\n" not in said and sys.path == before and "evil" not in sys.modules
    # a path or a malformed name is refused by its shape, before anything is looked for
    installed = target.startswith("agentcore_user_ext_missing")
    assert ("no installed module" if installed else "a dotted name, no path") in said


def test_each_front_end_names_code_only_as_the_operator(user_module, tmp_path, capsys):
    # the command line is the operator: its --provider, --hook and --scanner may name module:attribute
    assert get_info("agentcore_user_ext:EchoProvider", code=True).target == "agentcore_user_ext:EchoProvider"
    assert create_provider("agentcore_user_ext:EchoProvider", "weather").name == "scripted"
    check_hook_names(["agentcore_user_ext:shout"], code=True)
    assert isinstance(HOOKS["agentcore_user_ext:shout"], NamedHook)
    assert resolve_scanner("agentcore_user_ext:every_step", code=True).name == "agentcore_user_ext:every_step"
    # a transcript replayed names hooks as data: registered ones only
    for registry, target in POINTS.values():
        registry._entries.pop(target, None)
    sys.modules.pop("agentcore_user_ext", None)
    source = Run.start("hi", RunConfig(hooks=["agentcore_user_ext:shout"]))
    path = tmp_path / "source.json"
    path.write_text(transcript.dumps(source))
    assert main(["run", "--replay", str(path), "--no-db"]) == 2
    assert "code is loaded only when whoever runs agentcore names it" in capsys.readouterr().err
    assert "agentcore_user_ext" not in sys.modules


def test_an_mcp_client_naming_a_module_attribute_scanner_is_refused_and_nothing_is_imported(user_module, tmp_path):
    from agentcore.runs_server.limits import Limits
    from agentcore.runs_server.tools import scan
    from agentcore.store import Store

    store = Store(tmp_path / "runs.db")
    with pytest.raises(UsageError, match="code is loaded only when whoever runs agentcore names it"):
        scan(store, ["loop", "agentcore_user_ext:every_step"], False, Limits())
    assert "agentcore_user_ext" not in sys.modules
    assert scan(store, ["loop", "regex:x"], False, Limits())["runs"] == 0  # a built-in and a pattern: fine


def test_every_built_in_means_the_built_ins_after_the_operator_loads_a_scanner_of_its_own(
    user_module, tmp_path, capsys
):
    from agentcore.runs_server.limits import Limits
    from agentcore.runs_server.tools import scan
    from agentcore.store import Store

    seven = BUILTINS.built_in
    assert len(seven) == 7 and "agentcore_user_ext:every_step" not in seven
    db = str(tmp_path / "runs.db")
    Store(db).save_run(Run.start("hi", RunConfig()))
    assert main(["scan", "--db", db, "--scanner", "agentcore_user_ext:every_step"]) == 0
    capsys.readouterr()
    assert "agentcore_user_ext:every_step" in BUILTINS and BUILTINS.built_in == seven  # found again by its name
    # the command with no --scanner, its list, and an MCP client asking for every built-in: the seven alone
    assert main(["scan", "--db", db, "--list"]) == 0
    assert "agentcore_user_ext" not in capsys.readouterr().out
    assert main(["scan", "--db", db]) == 0
    assert "agentcore_user_ext" not in capsys.readouterr().out
    assert set(scan(Store(db), None, True, Limits())["findings"]) == set(seven)
