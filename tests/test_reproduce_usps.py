"""``python -m localsvm reproduce usps --quick`` runs end to end: Ulén's two
one-vs-rest cases beside the report's figures, and the one-vs-one case
labelled as a different set-up."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import run_reproduce
from localsvm.experiments import EXPERIMENTS
from localsvm.experiments.usps import CASES, smooth

#: Test error (%) and support vectors per case printed by the ``--quick`` run
#: of 2026-12-01 (the first 1000 training / 500 test digits).
QUICK = {
    "RBF, C = 10, one-vs-rest": (12.80, 559),
    "poly (x·y)³, C = 10, one-vs-rest": (9.80, 347),
    "RBF, C = 10, one-vs-one, gamma='scale'": (7.40, 590),
}


@pytest.fixture(scope="module")
def quick_run():
    return run_reproduce("usps", "--quick")


def test_registered():
    assert EXPERIMENTS["usps"][0] == "localsvm.experiments.usps"


def test_one_table_with_the_reports_figures(quick_run):
    text, rows = quick_run
    assert [r["case"] for r in rows] == [c[0] for c in CASES]
    by = {r["case"]: r for r in rows}
    assert by["RBF, C = 10, one-vs-rest"]["paper"] == 4.38
    assert by["poly (x·y)³, C = 10, one-vs-rest"]["paper"] == 5.08
    assert by["RBF, C = 10, one-vs-one, gamma='scale'"]["paper"] is None
    for r in rows:
        paper = "—" if r["paper"] is None else f"{r['paper']:.2f}"
        diff = "—" if r["paper"] is None else f"{r['error'] - r['paper']:+.2f}"
        line = rf"^{re.escape(r['case'])}\s+{paper}\s+{r['error']:.2f}\s+{re.escape(diff)}\s"
        assert re.search(line, text, flags=re.MULTILINE), r
    assert "assumed" in text and "not the report's set-up" in text
    assert "PASS" not in text and "FAIL" not in text


def test_quick_figures_match_the_stored_run(quick_run):
    """Within 1.5 points (500 test digits: one digit is 0.2 point) and 10 % of
    the support vectors of the stored run."""
    _, rows = quick_run
    for r in rows:
        error, n_sv = QUICK[r["case"]]
        assert r["error"] == pytest.approx(error, abs=1.5), r["case"]
        assert r["n_sv"] == pytest.approx(n_sv, rel=0.10), r["case"]


def test_smoothing_maps_to_minus_one_one_and_blurs():
    rng = np.random.default_rng(0)
    X = np.zeros((2, 256))
    X[0, 8 * 16 + 8] = 1.0  # one lit pixel
    X[1] = rng.random(256)
    S = smooth(X)
    assert S.shape == X.shape
    assert np.all(S >= -1.0) and np.all(S <= 1.0)
    img = S[0].reshape(16, 16)
    # The lit pixel spreads to its neighbours and stays the maximum.
    assert img[8, 8] == img.max() and img[8, 10] > -1.0 and img[8, 8] < 1.0
    # A constant image stays constant (reflection at the border).
    assert np.allclose(smooth(np.full((1, 256), 0.5)), 0.0)
