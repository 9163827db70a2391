"""The command line: the demo prints its comparison table, info lists plugins."""

from __future__ import annotations

import io
import subprocess
import sys

from localsvm.__main__ import main, run_demo, run_info


def test_demo_table():
    out, progress = io.StringIO(), io.StringIO()
    rows = run_demo(quick=True, out=out, progress=progress)
    text = out.getvalue()
    assert "localsvm SVC [rust]" in text and "scikit-learn SVC" in text
    by = {(r["data"], r["model"]): r for r in rows}
    ours = by[("banana (400 / 4900)", "localsvm SVC [rust]")]
    theirs = by[("banana (400 / 4900)", "scikit-learn SVC")]
    assert ours["backend"] == "rust"
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 0.005
    assert ours["accuracy"] > 0.85
    assert not any("scipy" in model for _, model in by)  # --quick leaves it out
    # The untimed warm-up, then one progress line before each row's fit,
    # naming what runs next.
    lines = progress.getvalue().splitlines()
    assert lines == (
        ["... warming up (one untimed small fit each)"]
        + [f"... next: {r['data']}, {r['model']}" for r in rows]
        + ["... done"]
    )


class _Recorder(io.StringIO):
    """A stream that notes what it holds at each flush."""

    def __init__(self):
        super().__init__()
        self.seen_at_flush: list[str] = []

    def flush(self):
        self.seen_at_flush.append(self.getvalue())
        super().flush()


def test_demo_rows_appear_as_they_finish_and_the_reference_row_is_small(monkeypatch):
    import localsvm.__main__ as cli

    monkeypatch.setattr(cli, "REFERENCE_ROWS", 40)
    cases = cli._cases(quick=False)
    # Keep the test short: the two banana cases only.
    monkeypatch.setattr(cli, "_cases", lambda quick: cases[:2])
    reference = cases[1]
    assert reference.backends == ("rust", "scipy") and reference.X_train.shape[0] == 40
    out = _Recorder()
    progress = io.StringIO()
    rows = cli.run_demo(quick=False, out=out, progress=progress)
    # Every row was flushed the moment it was printed.
    for row in rows:
        assert any(row["model"] in seen and row["data"] in seen for seen in out.seen_at_flush)
    by = {(r["data"], r["model"]): r for r in rows}
    scipy_row = by[(reference.name, "localsvm SVC [scipy]")]
    rust_row = by[(reference.name, "localsvm SVC [rust]")]
    assert scipy_row["backend"] == "scipy"
    assert abs(scipy_row["accuracy"] - rust_row["accuracy"]) < 0.01


def test_info_lists_plugins():
    out = io.StringIO()
    run_info(out=out)
    assert "backends: " in out.getvalue() and "rust" in out.getvalue()


def test_module_entry_point():
    res = subprocess.run(
        [sys.executable, "-m", "localsvm", "info"], capture_output=True, text=True, check=True
    )
    assert "engines:" in res.stdout
    assert main(["info"]) == 0
