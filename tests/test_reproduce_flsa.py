"""``python -m localsvm reproduce flsa --quick`` runs end to end and prints
every table row, the spiral image included."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from conftest import png_width
from localsvm.experiments import EXPERIMENTS, load


def test_flsa_is_registered():
    assert "flsa" in EXPERIMENTS
    mod = load("flsa")
    assert hasattr(mod, "add_arguments") and hasattr(mod, "run")


def test_quick_reproduction(tmp_path):
    import argparse

    mod = load("flsa")
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    args = parser.parse_args(["--quick", "--bench", "--out", str(tmp_path)])
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
    pytest.importorskip("matplotlib")
    assert (tmp_path / "two_spirals_rflsa.png").stat().st_size > 1000
    assert png_width(tmp_path / "two_spirals_rflsa.png") >= 1000
    assert len(result["tuning"]) == 12


def test_command_line_help():
    proc = subprocess.run(
        [sys.executable, "-m", "localsvm", "reproduce", "flsa", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--quick" in proc.stdout and "--realizations" in proc.stdout
