"""``python -m localsvm reproduce lisvm --quick`` runs end to end: the final
table for every data set and method (its CPU time printed once, in the
table), and both figures."""

from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import png_width, run_reproduce
from localsvm.experiments import EXPERIMENTS
from localsvm.experiments.lisvm import DATASETS, methods, print_table


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
    assert "Final table" in text and "What the paper" in text
    assert "equivalent (or bigger)" in text and "comparable or fewer" not in text
    assert "reprocess=0" in text


def test_streams_record_curves(quick_run):
    _, rows, _ = quick_run
    for r in rows:
        if r["section"] == "table" and r["method"] != "batch SVM":
            c = r["curves"]
            assert c["n_seen"][-1] == 80 and c["error"].shape == c["w2"].shape


def test_cpu_time_printed_once_and_figures(quick_run):
    text, rows, out_dir = quick_run
    # The CPU time is the table's column; no block after the table repeats it.
    assert not [r for r in rows if r["section"] == "speed"]
    assert "share of rebatch" not in text and "% of rebatch" not in text
    final = text[text.index("Final table") :]
    for r in (r for r in rows if r["section"] == "summary"):
        assert final.count(f"{r['data']:<9} {r['method']:<26} ") == 1, r
    assert "PASS" not in text and "FAIL" not in text
    pytest.importorskip("matplotlib")
    for name in ("lisvm_banana.png", "lisvm_validation.png"):
        assert (out_dir / name).stat().st_size > 1000
        assert png_width(out_dir / name) >= 1000, name


def test_table_spread_is_the_sample_standard_deviation():
    """Two realizations with errors 10 % and 20 %: the sample standard
    deviation (n - 1) is 7.07 points; dividing by n would give 5.00."""
    rows = [
        dict(section="table", data="banana", method=m, error=e, n_sv=n, cpu=c)
        for m in ("batch SVM", "rebatch")
        for e, n, c in ((0.1, 10, 1.0), (0.2, 14, 3.0))
    ]
    buf = io.StringIO()
    summary = print_table(rows, buf)
    text = buf.getvalue()
    assert "15.00 ± 7.07" in text and "12.0 ± 2.8" in text and "2.00 ± 1.41" in text
    assert "± 5.00" not in text
    assert summary[0]["error_std"] == pytest.approx(100 * np.std([0.1, 0.2], ddof=1))


#: Final validation error (%) and #SV per data set / method printed by the
#: ``--quick`` run of 2026-12-01 (realization 0, 80 examples per stream).
QUICK_SUMMARY = {
    "banana/LISVM 0.1 reprocess=0": (21.25, 43),
    "banana/LISVM 0.1": (15.68, 47),
    "banana/LISVM 0.01 reprocess=0": (17.39, 47),
    "banana/LISVM 0.01": (15.65, 47),
    "banana/LISVM 0.001 reprocess=0": (15.13, 47),
    "banana/LISVM 0.001": (15.77, 47),
    "banana/rebatch": (16.84, 47),
    "banana/batch SVM": (16.84, 47),
    "ringnorm/LISVM 0.1 reprocess=0": (2.40, 46),
    "ringnorm/LISVM 0.1": (2.53, 47),
    "ringnorm/LISVM 0.01 reprocess=0": (2.66, 49),
    "ringnorm/LISVM 0.01": (2.44, 48),
    "ringnorm/LISVM 0.001 reprocess=0": (2.68, 48),
    "ringnorm/LISVM 0.001": (2.46, 47),
    "ringnorm/rebatch": (2.44, 47),
    "ringnorm/batch SVM": (2.44, 47),
    "diabetis/LISVM 0.1 reprocess=0": (32.50, 65),
    "diabetis/LISVM 0.1": (28.00, 65),
    "diabetis/LISVM 0.01 reprocess=0": (28.00, 65),
    "diabetis/LISVM 0.01": (28.50, 65),
    "diabetis/LISVM 0.001 reprocess=0": (29.00, 65),
    "diabetis/LISVM 0.001": (30.00, 65),
    "diabetis/rebatch": (30.00, 65),
    "diabetis/batch SVM": (28.00, 65),
}


def test_quick_figures_match_the_stored_run(quick_run):
    """Errors within 1.5 points of the stored run (validation sets of 200 to
    4600 examples) and support vectors within 15 % of it."""
    _, rows, _ = quick_run
    got = {f"{r['data']}/{r['method']}": r for r in rows if r["section"] == "summary"}
    assert got.keys() == QUICK_SUMMARY.keys()
    for key, (error, n_sv) in QUICK_SUMMARY.items():
        assert got[key]["error"] == pytest.approx(error, abs=1.5), key
        assert got[key]["n_sv"] == pytest.approx(n_sv, rel=0.15), key


@pytest.mark.parametrize("option", ["--realizations", "--every"])
def test_counts_below_one_are_refused(option, capsys):
    import argparse

    from localsvm.experiments.lisvm import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args([option, "0"])
    assert "at least 1" in capsys.readouterr().err
