"""The documentation site's pages and the README: every ``pycon`` example
runs as written and prints what the page shows, every saved command output
that a page includes exists and names its command, and the estimator guide's
table states the estimators' real signatures.

The plotted examples run in the Sphinx build itself (the plot directive),
which ``.ci/run`` does with warnings as errors.
"""

from __future__ import annotations

import doctest
import inspect
import re
from pathlib import Path

import pytest

import localsvm

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"

PYCON = re.compile(r"^```pycon\n(.*?)^```", re.S | re.M)
INCLUDE = re.compile(r"^:?literalinclude:?\s*(\S+)|```\{literalinclude\}\s+(\S+)", re.M)


def _pages() -> list[str]:
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts]
    return [*sorted(p.relative_to(ROOT).as_posix() for p in pages), "README.md"]


def _example_pages() -> list[str]:
    """The pages that hold ``pycon`` examples."""
    return [p for p in _pages() if PYCON.search((ROOT / p).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("relpath", _example_pages())
def test_page_examples_run_as_written(relpath, tmp_path, monkeypatch):
    """The page's ``pycon`` blocks run in order in one namespace, as a reader
    would type them, and print what the page shows (doctest, with ``...``
    standing for the variable part of an output)."""
    text = (ROOT / relpath).read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    parser = doctest.DocTestParser()
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    runner = doctest.DocTestRunner(optionflags=flags)
    globs = {"__name__": "__main__"}
    try:
        for m in PYCON.finditer(text):
            line = text.count("\n", 0, m.start(1))  # the block's first line, 0-based
            test = parser.get_doctest(m.group(1), globs, relpath, relpath, line)
            runner.run(test, clear_globs=False)
            globs = test.globs  # the next block sees what this one defined
    finally:
        globs.clear()
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} example(s) of {relpath} failed (output above)"


def _included() -> list[str]:
    names = set()
    for relpath in _pages():
        for m in INCLUDE.finditer((ROOT / relpath).read_text(encoding="utf-8")):
            target = m.group(1) or m.group(2)
            if "results/" in target:
                names.add(target.rsplit("results/", 1)[1])
    return sorted(names)


def test_pages_include_saved_results():
    assert len(_included()) >= 10


@pytest.mark.parametrize("name", _included())
def test_saved_result_names_its_command(name):
    """Each included output exists, opens with the command that printed it
    (one that ``docs/results/generate.py`` knows) and says when it ran."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", RESULTS / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    path = RESULTS / name
    assert path.is_file(), f"{name} is included by a page but not saved"
    first, second = path.read_text(encoding="utf-8").splitlines()[:2]
    assert first.startswith(("$ python -m localsvm ", "$ python -m localsvm_", "$ bash ")), first
    assert second.startswith("# ran 20"), second
    assert path.stem in generate.COMMANDS, f"generate.py cannot rerun {name}"


def _table_rows(page: str) -> dict[str, list[str]]:
    """The rows of the estimator table on ``which.md``: name -> cells."""
    rows = {}
    for line in (DOCS / "user_guide" / page).read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) > 3:
            rows[cells[0].strip("`")] = cells
    return rows


def test_which_estimator_table_states_the_signatures():
    """The sample_weight / class_weight / partial_fit / sparse-model columns
    of the guide say what the estimators accept, read from their code."""
    rows = _table_rows("which.md")
    header = next(
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in (DOCS / "user_guide" / "which.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| estimator")
    )
    assert set(rows) >= {n for n in localsvm.__all__ if n.endswith(("SVC", "SVR", "SVM"))}
    for name, cells in rows.items():
        est = getattr(localsvm, name)
        cell = dict(zip(header, cells, strict=True))
        fit = inspect.signature(est.fit).parameters
        init = inspect.signature(est.__init__).parameters
        assert cell["sample_weight"].startswith("yes") == ("sample_weight" in fit), name
        assert cell["class_weight"].startswith("yes") == ("class_weight" in init), name
        assert cell["partial_fit"].startswith("yes") == hasattr(est, "partial_fit"), name
        default = init["kernel"].default if "kernel" in init else None
        assert f"`{default}`" in cell["default kernel"], (name, default)


def test_no_example_left_as_a_fragment():
    """Python on the pages is either a runnable ``pycon`` example or a plot;
    a bare ``python`` block would show code that nothing runs."""
    for relpath in _pages():
        text = (ROOT / relpath).read_text(encoding="utf-8")
        assert "```python" not in text, f"{relpath} has a python block that no test runs"


HELP_COMMANDS = [
    [],
    ["demo"],
    ["train"],
    ["predict"],
    ["reproduce"],
    ["reproduce", "lsvm"],
    ["reproduce", "lisvm"],
    ["reproduce", "flsa"],
    ["reproduce", "mcsvm"],
    ["reproduce", "usps"],
    ["bench"],
]


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "localsvm")
def test_cli_help_is_plain_text(command, capsys):
    """``--help`` prints plain text: no reST double backticks or roles from
    the docstrings that serve as descriptions."""
    from localsvm.__main__ import main

    try:
        status = main([*command, "--help"])
    except SystemExit as stop:
        status = stop.code
    out = capsys.readouterr()
    text = out.out + out.err
    assert status == 0 and "usage:" in text.lower(), text
    assert not re.search(r"``|:(mod|class|func|meth|data|attr):`", text), text


def test_api_reference_lists_every_public_name():
    """The API reference's autosummary tables hold every name of
    ``localsvm.__all__`` (the ``datasets`` module has its own section)."""
    listed = set(re.findall(r"^   (\w[\w.]*)$", (DOCS / "api" / "index.rst").read_text(), re.M))
    missing = set(localsvm.__all__) - listed - {"__version__", "datasets"}
    assert not missing, f"public names missing from docs/api/index.rst: {sorted(missing)}"
    assert "localsvm.datasets" in (DOCS / "api" / "index.rst").read_text()


def test_generate_saves_output_under_its_command(tmp_path, monkeypatch):
    """``docs/results/generate.py NAME`` runs the command and writes its
    output under the command line and the date (here ``info``, into a
    temporary folder instead of docs/results)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate", RESULTS / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    monkeypatch.setattr(generate, "HERE", tmp_path)
    path = generate.run("info")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert path == tmp_path / "info.txt"
    assert lines[0] == "$ python -m localsvm info"
    assert re.match(r"# ran 20\d\d-\d\d-\d\d \d\d:\d\d UTC, \d+ s wall, load average", lines[1])
    assert any("rust" in line for line in lines[2:]), lines
