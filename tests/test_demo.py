"""The command line: the demo prints its comparison table, info lists plugins."""

from __future__ import annotations

import io
import subprocess
import sys

from localsvm.__main__ import main, run_demo, run_info


def test_demo_table():
    out = io.StringIO()
    rows = run_demo(quick=True, out=out)
    text = out.getvalue()
    assert "localsvm SVC [rust]" in text and "scikit-learn SVC" in text
    by = {(r["data"], r["model"]): r for r in rows}
    ours = by[("banana (400 / 4900)", "localsvm SVC [rust]")]
    theirs = by[("banana (400 / 4900)", "scikit-learn SVC")]
    assert ours["backend"] == "rust"
    assert abs(ours["accuracy"] - theirs["accuracy"]) < 0.005
    assert ours["accuracy"] > 0.85
    assert ("banana (400 / 4900)", "localsvm SVC [scipy]") not in by  # --quick skips it


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
