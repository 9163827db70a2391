"""``python -m localsvm reproduce lisvm --quick`` runs end to end: the final
table for every data set and method, LISVM's Banana speed figures beside
rebatch's and the batch SVM's error, and both figures."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import png_width, run_reproduce
from localsvm.experiments import EXPERIMENTS
from localsvm.experiments.lisvm import DATASETS, methods


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("lisvm")
    text, rows = run_reproduce("lisvm", "--quick", "--out", str(out_dir))
    return text, rows, out_dir


def test_registered():
    assert EXPERIMENTS["lisvm"][0] == "localsvm.experiments.lisvm"


def test_table(quick_run):
    text, rows, _ = quick_run
    summary = [r for r in rows if r["section"] == "summary"]
    assert {(r["data"], r["method"]) for r in summary} == {
        (d, m) for d in DATASETS for m in methods()
    }
    for r in summary:
        assert 0.0 <= r["error"] <= 100.0 and r["n_sv"] > 0 and r["cpu"] >= 0.0
    assert "Final table" in text and "The paper" in text


def test_streams_record_curves(quick_run):
    _, rows, _ = quick_run
    for r in rows:
        if r["section"] == "table" and r["method"] != "batch SVM":
            c = r["curves"]
            assert c["n_seen"][-1] == 80 and c["error"].shape == c["w2"].shape


def test_speed_figures_and_figures(quick_run):
    text, rows, out_dir = quick_run
    speed = [r for r in rows if r["section"] == "speed"]
    assert len(speed) == 3
    # Each LISVM's share of rebatch's CPU time and its error gap to the batch
    # SVM, printed as figures (no verdict).
    for r in speed:
        assert 0.0 < r["ratio"] < float("inf") and np.isfinite(r["gap"])
        assert f"banana LISVM {r['eta']:g}: CPU" in text
        assert f"({r['gap']:+.2f} points)" in text
    assert "PASS" not in text and "FAIL" not in text
    pytest.importorskip("matplotlib")
    for name in ("lisvm_banana.png", "lisvm_validation.png"):
        assert (out_dir / name).stat().st_size > 1000
        assert png_width(out_dir / name) >= 1000, name
