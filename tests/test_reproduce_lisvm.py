"""``python -m localsvm reproduce lisvm --quick`` runs end to end: the final
table for every data set and method (its CPU time printed once, in the
table), and both figures."""

from __future__ import annotations

import io

import numpy as np
import pytest
from localsvm_experiments import EXPERIMENTS
from localsvm_experiments.lisvm import DATASETS, methods, print_table

from conftest import FullRunFigure, off_the_full_run, png_width, run_reproduce, saved_figures


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("lisvm")
    text, rows = run_reproduce("lisvm", "--quick", "--out", str(out_dir))
    return text, rows, out_dir


def test_registered():
    assert EXPERIMENTS["lisvm"][0] == "localsvm_experiments.lisvm"


def test_table(quick_run):
    _, rows, _ = quick_run
    summary = [r for r in rows if r["section"] == "summary"]
    assert {(r["data"], r["method"]) for r in summary} == {
        (d, m) for d in DATASETS for m in methods()
    }
    for r in summary:
        assert 0.0 <= r["error"] <= 100.0 and r["n_sv"] > 0 and r["cpu"] >= 0.0


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
    final = text[text.index("Final table") :]
    for r in (r for r in rows if r["section"] == "summary"):
        assert final.count(f"{r['data']:<9} {r['method']:<26} ") == 1, r
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


#: Final validation error (%) per data set / method of the full run whose
#: saved output the reproduction page includes (``docs/results/lisvm.txt``:
#: ``reproduce lisvm``, 5 realizations, the whole training set streamed):
#: (mean, sample std).
FULL_ERROR = saved_figures(
    ["lisvm"],
    r"^(?P<data>banana|ringnorm|diabetis)\s+(?P<method>\S.*?)\s{2,}"
    r"(?P<mean>[\d.]+) ± (?P<std>[\d.]+)\s",
    "{data}/{method}",
)

#: The same rows printed by the ``--quick`` run of 2026-12-01 (realization 0,
#: 80 examples per stream): they measure the quick protocol's gap to the full
#: run, which the tolerance allows for.
QUICK_ERROR = {
    "banana/LISVM 0.1 reprocess=0": 21.25,
    "banana/LISVM 0.1": 15.68,
    "banana/LISVM 0.01 reprocess=0": 17.39,
    "banana/LISVM 0.01": 15.65,
    "banana/LISVM 0.001 reprocess=0": 15.13,
    "banana/LISVM 0.001": 15.77,
    "banana/rebatch": 16.84,
    "banana/batch SVM": 16.84,
    "ringnorm/LISVM 0.1 reprocess=0": 2.40,
    "ringnorm/LISVM 0.1": 2.53,
    "ringnorm/LISVM 0.01 reprocess=0": 2.66,
    "ringnorm/LISVM 0.01": 2.44,
    "ringnorm/LISVM 0.001 reprocess=0": 2.68,
    "ringnorm/LISVM 0.001": 2.46,
    "ringnorm/rebatch": 2.44,
    "ringnorm/batch SVM": 2.44,
    "diabetis/LISVM 0.1 reprocess=0": 32.50,
    "diabetis/LISVM 0.1": 28.00,
    "diabetis/LISVM 0.01 reprocess=0": 28.00,
    "diabetis/LISVM 0.01": 28.50,
    "diabetis/LISVM 0.001 reprocess=0": 29.00,
    "diabetis/LISVM 0.001": 30.00,
    "diabetis/rebatch": 30.00,
    "diabetis/batch SVM": 28.00,
}

#: Validation examples (the first 2/3 of realization 0's test set), as in the
#: full run.
VALIDATION = {"banana": 3266, "ringnorm": 4666, "diabetis": 200}


def test_quick_figures_agree_with_the_full_run(quick_run):
    """Each quick-protocol validation error lies within the tolerance of
    ``FullRunFigure`` (conftest) of the full run's: the stored quick run's gap
    (80 training examples against 400 to 468) plus three standard errors of
    one realization's figure on its validation set."""
    from localsvm.datasets import load_dataset

    for name, n in VALIDATION.items():
        assert 2 * load_dataset(name, realization=0).X_test.shape[0] // 3 == n, name
    _, rows, _ = quick_run
    got = {f"{r['data']}/{r['method']}": r["error"] for r in rows if r["section"] == "summary"}
    expected = {
        k: FullRunFigure(m, s, QUICK_ERROR[k], VALIDATION[k.split("/")[0]])
        for k, (m, s) in FULL_ERROR.items()
    }
    assert not off_the_full_run(got, expected)


@pytest.mark.parametrize("option", ["--realizations", "--every"])
def test_counts_below_one_are_refused(option, capsys):
    import argparse

    from localsvm_experiments.lisvm import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args([option, "0"])
    assert "at least 1" in capsys.readouterr().err
