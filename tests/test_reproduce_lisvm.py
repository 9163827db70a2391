"""``python -m localsvm reproduce lisvm --quick`` runs end to end: the final
table for every data set and method, the Banana performance bar and both
figures."""

from __future__ import annotations

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


def test_bar_and_figures(quick_run):
    text, rows, out_dir = quick_run
    bar = [r for r in rows if r["section"] == "speed"]
    assert len(bar) == 3 and all(r["verdict"] in ("PASS", "FAIL") for r in bar)
    assert "rebatch" in text
    pytest.importorskip("matplotlib")
    for name in ("lisvm_banana.png", "lisvm_validation.png"):
        assert (out_dir / name).stat().st_size > 1000
        assert png_width(out_dir / name) >= 1000, name
