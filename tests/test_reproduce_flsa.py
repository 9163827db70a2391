"""``python -m localsvm reproduce flsa --quick`` runs end to end and prints
every table row, the spiral image included."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from localsvm_experiments import EXPERIMENTS, load
from localsvm_experiments.flsa import config

from conftest import FullRunFigure, off_the_full_run, png_width, saved_figures


def test_flsa_is_registered():
    assert "flsa" in EXPERIMENTS
    mod = load("flsa")
    assert hasattr(mod, "add_arguments") and hasattr(mod, "run")


def test_quick_reproduction(tmp_path):
    import argparse

    mod = load("flsa")
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    args = parser.parse_args(["--quick", "--bench", "--tuning", "--out", str(tmp_path)])
    out = io.StringIO()
    result = mod.run(args, out)
    text = out.getvalue()
    rows = result["accuracy"]
    assert {(r["dataset"], r["method"]) for r in rows} == {
        (d, m)
        for d in ("banana", "splice", "image", "ringnorm")
        for m in ("FLSA", "RFLSA", "SVM", "LS-SVM")
    }
    assert all(0.6 < r["accuracy"] <= 1.0 for r in rows)
    for line in ("banana", "89.29", "98.66", "Two spirals", "Tuning time", "RFLSA whole path"):
        assert line in text
    check_against_full_run(rows, text)
    # One accuracy table: its header once, one protocol note per data set,
    # the paper's columns that are not run said once.
    assert text.count("acc (ours)") == 1
    for name in ("banana", "splice", "image", "ringnorm"):
        assert text.count(f"  protocol ({name}): paper: ") == 1
    assert "FSALS-SVM, PFSALS-SVM and D-OFR columns" in text
    assert "Mathematical Problems in Engineering, 2013" in text
    assert "totals of its tuning-time" not in text and "16.226" in text
    pytest.importorskip("matplotlib")
    assert (tmp_path / "two_spirals_rflsa.png").stat().st_size > 1000
    assert png_width(tmp_path / "two_spirals_rflsa.png") >= 1000
    assert len(result["tuning"]) == 12


def test_tuning_table_and_data_sets_are_options(tmp_path):
    """Without --tuning only the accuracy table is printed (here for one data
    set), with the spiral image's line; the sets not run are named."""
    import argparse

    mod = load("flsa")
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    args = parser.parse_args(["--quick", "--datasets", "banana", "--out", str(tmp_path)])
    out = io.StringIO()
    result = mod.run(args, out)
    text = out.getvalue()
    assert {r["dataset"] for r in result["accuracy"]} == {"banana"}
    assert "tuning" not in result and "Tuning time" not in text
    assert "not selected in this run: splice, image, ringnorm" in text
    assert "Two spirals (194 points" in text
    with pytest.raises(SystemExit):
        parser.parse_args(["--datasets", "twonorm"])


def test_command_line_help():
    proc = subprocess.run(
        [sys.executable, "-m", "localsvm", "reproduce", "flsa", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--quick" in proc.stdout and "--realizations" in proc.stdout


#: Test accuracy (%) per data set / method of the full runs whose saved
#: outputs the reproduction page includes (``reproduce flsa``: 3 realizations
#: at the paper's sizes, 5-fold CV; banana, splice and image in one run,
#: ringnorm in another): (mean, sample std).
FULL_ACCURACY = saved_figures(
    ["flsa-banana-splice-image", "flsa-ringnorm"],
    r"^(?P<data>\w+)\s+\d+/\d+ (?P<method>\S+)\s+(?P<mean>[\d.]+) ± (?P<std>[\d.]+)\s",
    "{data}/{method}",
)

#: The same rows printed by the ``--quick`` run of 2026-12-01 (1 realization,
#: 3 folds, small sets and grids): they measure the quick protocol's gap to
#: the full run, which the tolerance allows for.
QUICK_ACCURACY = {
    "banana/FLSA": 87.50,
    "banana/RFLSA": 87.70,
    "banana/SVM": 87.50,
    "banana/LS-SVM": 88.20,
    "splice/FLSA": 80.33,
    "splice/RFLSA": 78.83,
    "splice/SVM": 85.50,
    "splice/LS-SVM": 85.83,
    "image/FLSA": 93.00,
    "image/RFLSA": 92.20,
    "image/SVM": 93.40,
    "image/LS-SVM": 94.80,
    "ringnorm/FLSA": 98.30,
    "ringnorm/RFLSA": 98.30,
    "ringnorm/SVM": 98.00,
    "ringnorm/LS-SVM": 98.20,
}

#: Training / test examples per set in the quick protocol (the experiment's own).
QUICK_SIZES = config(True, None, None).sizes


def check_against_full_run(rows, text):
    """Each quick-protocol accuracy lies within the tolerance of
    ``FullRunFigure`` (conftest) of the full run's: the stored quick run's gap
    (300 or 400 training examples against 400 to 3000) plus three standard
    errors of one realization's figure on the quick test set. LS-SVM keeps
    every training example."""
    for name, (n_train, n_test) in QUICK_SIZES.items():
        assert re.search(rf"^{name}\s+{n_train}/{n_test} ", text, flags=re.MULTILINE), name
    got = {f"{r['dataset']}/{r['method']}": 100 * r["accuracy"] for r in rows}
    expected = {
        k: FullRunFigure(m, s, QUICK_ACCURACY[k], QUICK_SIZES[k.split("/")[0]][1])
        for k, (m, s) in FULL_ACCURACY.items()
    }
    assert not off_the_full_run(got, expected)
    for r in rows:
        if r["method"] == "LS-SVM":
            assert r["n_sv"] == QUICK_SIZES[r["dataset"]][0]


def test_spread_is_the_sample_standard_deviation():
    """Two realizations at 10 % and 20 %: the sample standard deviation
    (n - 1), as the LSVM, MCSVM and LISVM tables print, is 7.07 points;
    dividing by n would give 5.00."""
    from localsvm_experiments.flsa import _fmt

    assert _fmt([0.1, 0.2], 100) == "15.00 ± 7.07"
    assert _fmt([10, 14], digits=1) == "12.0 ± 2.8"
    assert _fmt([0.5], 100) == "50.00"


@pytest.mark.parametrize(
    "argv, word",
    [(["--realizations", "0"], "at least 1"), (["--folds", "1"], "at least 2 folds")],
)
def test_counts_below_one_are_refused(argv, word, capsys):
    """``--realizations 0`` used to fall back to the default of 3 in silence."""
    import argparse

    parser = argparse.ArgumentParser()
    load("flsa").add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    assert word in capsys.readouterr().err
