"""The package's shape: no import cycle inside agentcore/, lazy imports included, no module that imports
another module's private name, no module over 600 lines and at most 24 at the top. The import checks read the source
with `ast`, so an import inside a function counts too."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agentcore"


@dataclass(frozen=True)
class Import:
    """One imported name: the module that imports it, where, the module it comes from, and the name."""

    importer: str
    line: int
    source: str  # the module the name is read from: a submodule when the name is one
    name: str | None  # None for `import agentcore.x`
    runs: bool = True  # False under `if TYPE_CHECKING:`, which never runs


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name; a package's `__init__.py` is the package's own name."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes under `if TYPE_CHECKING:`: for type checkers only, they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skipped


def imports(modules: dict[str, Path]) -> list[Import]:
    """Every import of a module of the package, at the top or inside a function, relative or absolute."""
    found = []
    root = next(iter(modules)).split(".")[0]
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        checking_only = _type_checking_only(tree)
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.walk(tree):
            runs = id(node) not in checking_only
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == root:
                        found.append(Import(importer, node.lineno, _existing(alias.name, modules), None, runs))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join([*base, *([node.module] if node.module else [])])
                elif (node.module or "").split(".")[0] == root:
                    source = node.module or ""
                else:
                    continue
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    source_module = submodule if submodule in modules else source
                    found.append(Import(importer, node.lineno, source_module, alias.name, runs))
    return found


@functools.cache
def package_imports() -> tuple[Import, ...]:
    """Every import of agentcore's modules, read once for the tests that each ask a question of them."""
    return tuple(imports(module_names()))


def _existing(name: str, modules: dict[str, Path]) -> str:
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as the modules along it, first repeated at the end; None when there is none."""
    state: dict[str, str] = {}  # "open" while on the current path, "done" once every path from it is explored
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(edges):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def import_graph(found: list[Import]) -> dict[str, set[str]]:
    """Which modules each module imports when it runs (itself left out: a package importing its own name is no cycle).

    Imports under `if TYPE_CHECKING:` are left out: they never run, so they cannot close a cycle at import time.
    """
    edges: dict[str, set[str]] = {}
    for imp in found:
        if imp.runs and imp.source != imp.importer:
            edges.setdefault(imp.importer, set()).add(imp.source)
    return edges


def private_imports(found: list[Import]) -> list[Import]:
    """Imports of a `_name` from another module, TYPE_CHECKING ones too; a package may use its own private modules."""
    out = []
    for imp in found:
        name = imp.name or ""
        if not name.startswith("_") or name.startswith("__") or imp.source == imp.importer:
            continue
        package = imp.source.rpartition(".")[0]
        inside = imp.importer == package or imp.importer.startswith(f"{package}.")
        own_submodule = imp.source == f"{package}.{name}" and inside
        if not own_submodule:
            out.append(imp)
    return out


def test_no_module_of_agentcore_imports_itself_back_through_a_cycle():
    found = package_imports()
    cycle = find_cycle(import_graph(found))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_module_of_agentcore_imports_another_modules_private_name():
    bad = [f"{i.importer}:{i.line} imports {i.name} from {i.source}" for i in private_imports(package_imports())]
    assert bad == []


def test_the_checks_find_a_lazy_cycle_and_a_private_import(tmp_path):
    # the checks themselves, on a package built to have both faults
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import thing\n")
    (package / "b.py").write_text("def thing():\n    from pkg.sub import c\n\n_hidden = 1\n")
    (package / "sub" / "__init__.py").write_text("from . import _private\n")  # its own private submodule
    (package / "sub" / "_private.py").write_text("")
    (package / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..d import x\nfrom ..a import y\n"
    )
    (package / "d.py").write_text("from .sub.c import z\nfrom .b import _hidden\n")
    (package / "e.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub import _private\n"
    )
    found = imports(module_names(package))
    assert find_cycle(import_graph(found)) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]
    assert import_graph(found)["pkg.sub.c"] == {"pkg.a"}  # its TYPE_CHECKING import of d never runs
    assert [(i.importer, i.name) for i in private_imports(found)] == [("pkg.d", "_hidden"), ("pkg.e", "_private")]


MOST_LINES = 600  # a module a reader can hold: past this, a module has become two
MOST_TOP_MODULES = 24  # agentcore/ itself holds the core; each family lives in a folder of its own


def oversized(package: Path = PACKAGE) -> list[str]:
    """The package's modules longer than MOST_LINES lines, each with its length."""
    found = []
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MOST_LINES:
            found.append(f"{path.relative_to(package.parent)}: {lines} lines")
    return found


def top_modules(package: Path = PACKAGE) -> list[str]:
    """The modules at the package's top, its `__init__` and `__main__` aside."""
    return sorted(p.name for p in package.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def test_no_module_of_agentcore_is_over_600_lines_and_its_top_holds_at_most_24():
    assert oversized() == []
    assert len(top_modules()) <= MOST_TOP_MODULES, top_modules()


def test_the_shape_checks_count_at_their_limits(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("x = 1\n" * 700)  # counted: a package's own module is a module too
    (package / "__main__.py").write_text("")
    (package / "exact.py").write_text("x = 1\n" * MOST_LINES)
    (package / "over.py").write_text("x = 1\n" * (MOST_LINES + 1))
    assert oversized(package) == ["pkg/__init__.py: 700 lines", f"pkg/over.py: {MOST_LINES + 1} lines"]
    assert top_modules(package) == ["exact.py", "over.py"]


def test_the_runs_library_imports_nothing_of_the_test_runner():
    found = package_imports()
    store = [f"{i.importer}:{i.line} imports {i.source}" for i in found if i.importer.startswith("agentcore.store")]
    assert store, "no import of the store was read"
    assert [s for s in store if " imports agentcore.testing" in s] == []
