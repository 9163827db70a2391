"""The public API's docstrings follow numpydoc and cite sources users can read.

Every public class and function that ``localsvm`` exports in ``__all__`` (and
every loader of :mod:`localsvm.datasets`), with the public methods and
properties they define or inherit from localsvm, is checked by
``numpydoc.validate``, as scikit-learn's ``sklearn/tests/test_docstrings.py``
checks its own. A second test keeps references to internal design notes out
of the package's text, and out of the Rust sources, the READMEs, the plugins
and the tests.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import localsvm
import localsvm.datasets

numpydoc_validation = pytest.importorskip("numpydoc.validate")

# Checks ignored everywhere:
# - GL01, GL02: where the summary starts and where the closing quotes sit is
#   left to the formatter; the summary may share the line of the opening
#   quotes (scikit-learn ignores these two as well).
# - RT02: the first line of a Returns section may name the returned value
#   when the description refers to it (scikit-learn ignores it too).
# - SA01: "See Also" sections are not required; related objects are
#   cross-referenced in the text where they matter.
IGNORED = frozenset({"GL01", "GL02", "RT02", "SA01"})

# Further checks ignored for methods and properties, which the class
# docstring introduces: no extended summary (ES01) or Examples section (EX01)
# is required of them (the class's Examples show them in use). scikit-learn
# makes the same exception.
IGNORED_MEMBER = IGNORED | {"ES01", "EX01"}

# Functions need Parameters, Returns and Examples but no extended summary: a
# one-line summary is the whole story for ``list_backends`` and friends.
IGNORED_FUNCTION = IGNORED | {"ES01"}


def _public_members(klass: type) -> list[str]:
    """Public methods and properties of ``klass``, defined by localsvm."""
    names = []
    for base in klass.__mro__:
        if not base.__module__.startswith("localsvm"):
            continue
        for name, attr in vars(base).items():
            if name.startswith("_") or name in names:
                continue
            if isinstance(attr, property):
                names.append(name)
                continue
            func = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
            if inspect.isfunction(func) and func.__module__.startswith("localsvm"):
                names.append(name)
    return sorted(names)


def _collect() -> list[tuple[str, str]]:
    """``(dotted name, kind)`` for every object whose docstring is checked."""
    items: list[tuple[str, str]] = []
    modules = [(localsvm, "localsvm"), (localsvm.datasets, "localsvm.datasets")]
    for module, prefix in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                items.append((f"{prefix}.{name}", "class"))
                items.extend(
                    (f"{prefix}.{name}.{member}", "member") for member in _public_members(obj)
                )
            elif inspect.isfunction(obj):
                items.append((f"{prefix}.{name}", "function"))
            # Anything else (``__version__``, ``datasets``, ``DATASETS``, and
            # ``hookimpl``, pluggy's marker instance) is data, not API with a
            # signature; it is documented where it is defined.
    return items


OBJECTS = _collect()


def _filter_errors(errors, name: str, kind: str):
    ignored = {"class": IGNORED, "function": IGNORED_FUNCTION, "member": IGNORED_MEMBER}[kind]
    for code, message in errors:
        if code in ignored:
            continue
        if kind == "member" and code in ("PR02", "GL08"):
            # Properties have no parameters; numpydoc reads the getter's.
            owner, attr = name.rsplit(".", 1)
            klass = numpydoc_validation.Validator._load_obj(owner)
            if isinstance(inspect.getattr_static(klass, attr), property):
                continue
        yield code, message


def test_collects_the_public_api():
    names = {name for name, _ in OBJECTS}
    assert {"localsvm.SVC", "localsvm.SVC.fit", "localsvm.SVC.kernel_spec_"} <= names
    assert {"localsvm.run_tasks", "localsvm.datasets.load_banana"} <= names
    assert "localsvm.SVC.get_params" not in names  # scikit-learn's, not ours


@pytest.mark.parametrize(("name", "kind"), OBJECTS, ids=[name for name, _ in OBJECTS])
def test_docstring(name, kind):
    result = numpydoc_validation.validate(name)
    errors = list(_filter_errors(result["errors"], name, kind))
    if errors:
        listing = "\n".join(f"  {code}: {message}" for code, message in errors)
        raise AssertionError(f"{name} ({result['file']}:{result['file_line']}):\n{listing}")


# ------------------------------------------------------------------- citations

PACKAGE = Path(localsvm.__file__).parent

# References users cannot follow: the file name of a design note kept outside
# the repository, three-digit paper identifiers with leading zeros (a random
# state such as "seed 0" does not match) and tracker numbers. Papers are cited
# by authors, title and venue instead.
INTERNAL_REFERENCE = re.compile(r"ALGORITHMS\.md|\bseeds?\s+0\d\d\b|\bissues?\s+#?\d+", re.I)


def _text_files() -> list[str]:
    files = [p for ext in ("*.py", "*.pyi") for p in PACKAGE.rglob(ext)]
    return sorted(p.relative_to(PACKAGE).as_posix() for p in files)


def _assert_no_internal_references(path: Path, relpath: str) -> None:
    text = path.read_text(encoding="utf-8")
    hits = [
        f"  line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
        for m in INTERNAL_REFERENCE.finditer(text)
    ]
    assert not hits, f"{relpath} cites internal references:\n" + "\n".join(hits)


@pytest.mark.parametrize("relpath", _text_files())
def test_no_internal_references(relpath):
    _assert_no_internal_references(PACKAGE / relpath, relpath)


ROOT = Path(__file__).resolve().parents[1]


def _repository_files() -> list[str]:
    """The Rust sources, the READMEs, the documentation site (its pages, saved
    outputs and scripts), the plugins and the tests (this file names the
    patterns, so it is left out)."""
    patterns = (
        "rust/src/**/*.rs",
        "README.md",
        "plugins/*/README.md",
        "plugins/**/*.py",
        "docs/**/*.md",
        "docs/**/*.rst",
        "docs/**/*.py",
        "docs/**/*.sh",
        "docs/results/*.txt",
    )
    files = [p for pattern in patterns for p in ROOT.glob(pattern)]
    files += [p for p in (ROOT / "tests").rglob("*.py") if p.name != Path(__file__).name]
    return sorted(
        p.relative_to(ROOT).as_posix()
        for p in files
        if "build" not in p.parts and "_build" not in p.parts and "generated" not in p.parts
    )


@pytest.mark.parametrize("relpath", _repository_files())
def test_no_internal_references_in_the_repository(relpath):
    _assert_no_internal_references(ROOT / relpath, relpath)
