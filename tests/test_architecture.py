"""Architecture rules of ``python/localsvm``, checked on the source text (the
modules are parsed, not imported):

* no import cycle among localsvm's modules;
* the estimators reach the compiled core and the solvers only through the
  backend interface: they neither import ``localsvm._core`` nor name a
  built-in backend;
* the interface modules do not depend on the plugin manager, directly or
  through other modules;

and of the Rust core (``rust/src``), from its ``crate::``/``super::`` paths:

* no cycle among the crate's top-level modules (a directory module such as
  ``kernel`` counting as one), nor among the files of a directory module.
"""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "python" / "localsvm"
RUST_SRC = Path(__file__).resolve().parents[1] / "rust" / "src"

#: The estimator modules (relative to ``python/localsvm``); add new ones here.
ESTIMATOR_MODULES = (
    "_base.py",  # the estimators' shared base class
    "svc.py",
    "local_svc.py",
    "profile_svc.py",
    "flsa.py",
    "incremental_svc.py",
    "cluster_svc.py",
    "cell_svc.py",
    "cells.py",  # CellSVC's and SVC(init='cells')'s partition
    "_regions.py",  # per-region models shared by CellSVC and ProfileSVC
    "_multiclass.py",  # the one multiclass layer over binary models
    "tuning.py",  # SVCCV and SVRCV
)

#: Every module that may import ``localsvm._core``, and why. A backend owns
#: the solving; kernel evaluation (prediction, kernel matrices) belongs to
#: the package's compute layer, ``kernels.py``, shared by every backend so a
#: model predicts the same whichever backend trained it.
CORE_USERS = {
    "localsvm.backends.rust": "the built-in backend: the Rust solvers",
    "localsvm.kernels": "kernel evaluation for every backend",
    "localsvm.flsa": "FLSA's path is not a QP solve",
    "localsvm.engines": "Ctrl-C reaches the core's running solves",
    "localsvm": "the package version is the compiled core's",
}

#: Estimator modules allowed to import ``localsvm._core``, and why.
CORE_IMPORT_ALLOWED = {
    # FLSA is not a QP: its sparse path comes from the core's dedicated
    # routine (``_core.flsa_path``), which no SolverBackend offers.
    "flsa.py": "FLSA's path is not a QP solve",
}

#: Modules that define a plugin interface.
INTERFACE_MODULES = (
    "localsvm.backends.base",
    "localsvm.clustering.base",
    "localsvm.similarity.base",
    "localsvm.engines",
)
PLUGIN_MANAGER = "localsvm.plugins"

BUILTIN_BACKEND_NAMES = frozenset({"rust", "scipy"})
BUILTIN_BACKEND_MODULES = frozenset({"localsvm.backends.rust", "localsvm.backends.scipy_qp"})
CORE_MODULE = "localsvm._core"


def module_name(path: Path, package_dir: Path) -> str:
    """``localsvm.a.b`` for ``<package_dir>/a/b.py`` (a package for ``__init__.py``)."""
    parts = [package_dir.name, *path.relative_to(package_dir).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(package_dir: Path) -> dict[str, Path]:
    """Every Python module below ``package_dir``, by dotted name."""
    return {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}


def imported_names(module: str, path: Path) -> Iterator[str]:
    """Every dotted name that an import statement of the module may load,
    function-local imports included: for ``from X import y`` both ``X`` and
    ``X.y`` (which is a module when ``y`` is a submodule)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base.pop()
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def ancestors(name: str) -> list[str]:
    """The packages that contain ``name``: ``a.b.c`` → ``[a, a.b]``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module → the modules of the package it imports.

    Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, so
    those are edges too, except towards the importer's own parent packages:
    they are always being imported already when the module runs.
    """
    modules = find_modules(package_dir)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        own_parents = set(ancestors(module))
        deps: set[str] = set()
        for name in imported_names(module, path):
            if name in modules:
                deps.update([*ancestors(name), name])
        graph[module] = {d for d in deps if d in modules and d != module} - own_parents
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its first module repeated at the end), or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as err:
        return list(err.args[1])
    return None


def test_no_import_cycle():
    graph = import_graph(PACKAGE_DIR)
    assert len(graph) > 20, "the package was not found"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(reversed(cycle))


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """The modules ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


@pytest.mark.parametrize("interface", INTERFACE_MODULES)
def test_interfaces_do_not_depend_on_the_plugin_manager(interface):
    graph = import_graph(PACKAGE_DIR)
    assert interface in graph, f"{interface} is listed in INTERFACE_MODULES but does not exist"
    assert PLUGIN_MANAGER not in reachable(graph, interface)


def test_the_checker_sees_cycles(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("def f():\n    from .sub.b import g\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from .. import a\n")
    graph = import_graph(pkg)
    # The package's own __init__ importing a submodule is not a cycle.
    assert graph["pkg.a"] == {"pkg.sub", "pkg.sub.b"}
    assert find_cycle(graph) is not None
    # Through a parent package's __init__ too.
    (pkg / "sub" / "b.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from ..a import f\n")
    assert find_cycle(import_graph(pkg)) is not None
    (pkg / "sub" / "__init__.py").write_text("")
    assert find_cycle(import_graph(pkg)) is None


def backend_names_in(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every string literal that is a built-in backend's name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in BUILTIN_BACKEND_NAMES
    ]


@pytest.mark.parametrize("filename", ESTIMATOR_MODULES)
def test_estimators_go_through_the_backend_interface(filename):
    path = PACKAGE_DIR / filename
    assert path.is_file(), f"{filename} is listed in ESTIMATOR_MODULES but does not exist"
    module = module_name(path, PACKAGE_DIR)
    imports = set(imported_names(module, path))
    if filename not in CORE_IMPORT_ALLOWED:
        assert CORE_MODULE not in imports, f"{filename} imports {CORE_MODULE}"
    assert not imports & BUILTIN_BACKEND_MODULES, f"{filename} imports a built-in backend"
    assert not backend_names_in(path), f"{filename} names a backend: {backend_names_in(path)}"


def test_only_the_listed_modules_reach_the_core():
    modules = find_modules(PACKAGE_DIR)
    users = {m for m, p in modules.items() if CORE_MODULE in set(imported_names(m, p))}
    unlisted = users - set(CORE_USERS)
    assert not unlisted, f"modules importing {CORE_MODULE} outside CORE_USERS: {sorted(unlisted)}"
    stale = set(CORE_USERS) - users
    assert not stale, f"CORE_USERS lists modules that no longer import the core: {sorted(stale)}"


def test_core_exceptions_are_estimators():
    assert set(CORE_IMPORT_ALLOWED) <= set(ESTIMATOR_MODULES)


# ---------------------------------------------------------------- Rust core

_LINE_COMMENT = re.compile(r"//[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
#: ``crate::a`` but not ``$crate::a`` (a macro's path to its own crate).
_CRATE_PATH = re.compile(r"(?<![$\w])crate::(\w+)(?:::(\w+))?")
_SUPER_PATH = re.compile(r"(?<![\w])super::(\w+)")
#: ``pub use a::b;`` in ``lib.rs``: ``crate::b`` is ``a``'s submodule ``b``.
_ALIAS = re.compile(r"^\s*pub use (\w+)::(\w+);", re.M)


def rust_code(path: Path) -> str:
    """The file's code without comments and without its test modules
    (``#[cfg(test)] mod tests { ... }``), which may use anything."""
    text = _BLOCK_COMMENT.sub("", _LINE_COMMENT.sub("", path.read_text(encoding="utf-8")))
    while (m := _TEST_MODULE.search(text)) is not None:
        depth, end = 1, m.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        text = text[: m.start()] + text[end:]
    return text


def rust_modules(src: Path) -> dict[str, list[Path]]:
    """Top-level module → its files (a directory module: every file below it)."""
    modules: dict[str, list[Path]] = {}
    for path in sorted(src.glob("*.rs")):
        if path.stem not in {"lib", "main"}:
            modules.setdefault(path.stem, []).append(path)
    for sub in sorted(p for p in src.iterdir() if p.is_dir()):
        modules.setdefault(sub.name, []).extend(sorted(sub.rglob("*.rs")))
    return modules


def rust_graph(src: Path) -> dict[str, set[str]]:
    """Top-level module → the top-level modules its code names through
    ``crate::`` paths (``use`` lines and paths in expressions), with the
    crate root's re-exports of submodules resolved to their module."""
    modules = rust_modules(src)
    lib = src / "lib.rs"
    aliases = {}
    if lib.is_file():
        aliases = {b: a for a, b in _ALIAS.findall(rust_code(lib)) if a in modules}
    graph: dict[str, set[str]] = {}
    for name, paths in modules.items():
        deps = set()
        for path in paths:
            for head, _ in _CRATE_PATH.findall(rust_code(path)):
                head = aliases.get(head, head)
                if head in modules and head != name:
                    deps.add(head)
        graph[name] = deps
    return graph


def rust_package_graph(package: Path) -> dict[str, set[str]]:
    """File module → the sibling file modules it names, inside one directory
    module (``super::x`` from a file directly in it, ``crate::<package>::x``
    from any file below it; a file deeper down counts as its parent's)."""
    files = {p.stem: p for p in package.glob("*.rs") if p.stem != "mod"}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for path in package.rglob("*.rs"):
        rel = path.relative_to(package).parts
        owner = rel[0].removesuffix(".rs")
        if owner not in files:
            continue
        code = rust_code(path)
        named = {b for a, b in _CRATE_PATH.findall(code) if a == package.name and b}
        if len(rel) == 1:
            named |= set(_SUPER_PATH.findall(code))
        graph[owner] |= {n for n in named if n in files and n != owner}
    return graph


def test_no_rust_module_cycle():
    graph = rust_graph(RUST_SRC)
    assert {"solver", "kernel", "incremental"} <= set(graph), "the Rust sources were not found"
    cycle = find_cycle(graph)
    assert cycle is None, "Rust module cycle: " + " -> ".join(reversed(cycle))


@pytest.mark.parametrize("package", sorted(p.name for p in RUST_SRC.iterdir() if p.is_dir()))
def test_no_rust_cycle_inside_a_directory_module(package):
    graph = rust_package_graph(RUST_SRC / package)
    cycle = find_cycle(graph)
    assert cycle is None, f"cycle in {package}/: " + " -> ".join(reversed(cycle))


def test_the_rust_checker_sees_cycles(tmp_path):
    src = tmp_path / "src"
    (src / "k").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod a;\npub mod k;\npub use k::p;\n")
    (src / "a.rs").write_text(
        "//! Not a use: [`crate::b`].\nuse crate::k::Kind;\n"
        "macro_rules! m { () => { $crate::b::f() } }\n"
    )
    (src / "b.rs").write_text(
        "pub fn f() { crate::a::g() }\n#[cfg(test)]\nmod tests { use crate::k; }\n"
    )
    (src / "k" / "mod.rs").write_text("mod kinds;\npub mod p;\n")
    (src / "k" / "kinds.rs").write_text("use super::p::X;\n")
    (src / "k" / "p.rs").write_text("pub fn q() -> usize { 1 }\n")
    graph = rust_graph(src)
    # Comments, $crate paths and test modules are not dependencies.
    assert graph == {"a": {"k"}, "b": {"a"}, "k": set()}
    assert find_cycle(graph) is None
    # A path through the crate root's re-export, in an expression.
    (src / "k" / "p.rs").write_text("pub fn q() -> usize { crate::b::f(); 1 }\n")
    assert find_cycle(rust_graph(src)) is not None
    (src / "k" / "p.rs").write_text("pub fn q() {}\n")
    (src / "b.rs").write_text("fn h() { crate::p::q() }\n")
    assert rust_graph(src)["b"] == {"k"}
    # Inside a directory module.
    assert rust_package_graph(src / "k") == {"kinds": {"p"}, "p": set()}
    (src / "k" / "p.rs").write_text("use crate::k::kinds::K;\n")
    assert find_cycle(rust_package_graph(src / "k")) is not None
