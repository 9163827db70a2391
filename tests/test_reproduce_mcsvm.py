"""``python -m localsvm reproduce mcsvm --quick --bench`` runs end to end:
Table 1 with the paper's figures beside ours, and the USPS fit time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import run_reproduce
from localsvm.experiments import EXPERIMENTS, load
from localsvm.experiments.mcsvm import DATASETS, METHODS, PAPER


@pytest.fixture(scope="module")
def quick_run():
    return run_reproduce("mcsvm", "--quick", "--bench")


def test_mcsvm_is_registered():
    assert EXPERIMENTS["mcsvm"][0] == "localsvm.experiments.mcsvm"
    mod = load("mcsvm")
    assert hasattr(mod, "add_arguments") and hasattr(mod, "run")


def test_table1_rows_with_the_papers_numbers(quick_run):
    text, rows = quick_run
    table = [r for r in rows if r["section"] == "table1"]
    assert {(r["data"], r["method"]) for r in table} == {(d, m) for d in DATASETS for m in METHODS}
    for r in table:
        assert 0.5 < r["accuracy"] <= 1.0
        assert r["paper"] == PAPER[r["data"]][r["method"]]
        assert r["fit_s"] > 0 and r["predict_s"] > 0
    for figure in ("97.81", "86.68", "89.30", "90.55", "88.54", "96.32"):
        assert figure in text


def test_bench_rows(quick_run):
    text, rows = quick_run
    bench = [r for r in rows if r["section"] == "bench"]
    assert {(r["data"], r["method"]) for r in bench} == {
        (d, m) for d in ("segment", "waveform") for m in ("OvR", "MCSVM")
    }
    (usps,) = [r for r in rows if r["section"] == "usps"]
    assert usps["accuracy"] > 0.8
    assert "USPS" in text and f"accuracy {100 * usps['accuracy']:.2f} %" in text
    assert "target" not in text


def test_command_line_help():
    proc = subprocess.run(
        [sys.executable, "-m", "localsvm", "reproduce", "mcsvm", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--quick" in proc.stdout and "--bench" in proc.stdout
