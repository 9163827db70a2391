"""``python -m localsvm reproduce usps --quick`` runs end to end: Ulén's two
one-vs-rest cases (each with three smoothing windows) beside the report's
figures, and the one-vs-one case labelled as a different set-up."""

from __future__ import annotations

import re

import numpy as np
import pytest
from localsvm_experiments import EXPERIMENTS
from localsvm_experiments.usps import CASES, smooth

from conftest import FullRunFigure, off_the_full_run, run_reproduce, saved_figures

#: Test error (%) per case of the full run whose saved output the
#: reproduction page includes (``docs/results/usps.txt``: ``reproduce usps``,
#: all 7291 training / 2007 test digits, the data set's one split, so no
#: spread).
FULL = {
    case: mean
    for case, (mean, _) in saved_figures(
        ["usps"],
        r"^(?P<case>\S.*?)\s{2,}(?:—|[\d.]+)\s+(?P<mean>[\d.]+)\s+(?:—|[+-][\d.]+)\s+\d+\s+[\d.]+$",
        "{case}",
    ).items()
}

#: The same cases printed by the ``--quick`` run of 2026-12-01 (the first 1000
#: training / 500 test digits): they measure the quick protocol's gap to the
#: full run, which the tolerance allows for.
QUICK = {
    "RBF 1/250, C = 10, ovr, σ = 2 3×3": 8.80,
    "RBF 1/250, C = 10, ovr, σ = 2 5×5": 9.60,
    "RBF 1/250, C = 10, ovr, σ = 2 whole": 12.80,
    "poly (x·y)³, C = 10, ovr, σ = 2 3×3": 8.80,
    "poly (x·y)³, C = 10, ovr, σ = 2 5×5": 8.60,
    "poly (x·y)³, C = 10, ovr, σ = 2 whole": 9.80,
    "RBF, C = 10, one-vs-one, gamma='scale', raw": 7.40,
}


@pytest.fixture(scope="module")
def quick_run():
    return run_reproduce("usps", "--quick")


def test_registered():
    assert EXPERIMENTS["usps"][0] == "localsvm_experiments.usps"


def test_one_table_with_the_reports_figures(quick_run):
    text, rows = quick_run
    assert [r["case"] for r in rows] == [c[0] for c in CASES]
    by = {r["case"]: r for r in rows}
    assert by["RBF, C = 10, one-vs-one, gamma='scale', raw"]["paper"] is None
    for r in rows:
        paper = "—" if r["paper"] is None else f"{r['paper']:.2f}"
        diff = "—" if r["paper"] is None else f"{r['error'] - r['paper']:+.2f}"
        line = rf"^{re.escape(r['case'])}\s+{paper}\s+{r['error']:.2f}\s+{re.escape(diff)}\s"
        assert re.search(line, text, flags=re.MULTILINE), r
    # The note gives the range each kernel's error spans over the windows.
    for kernel in ("RBF", "poly"):
        errs = [r["error"] for r in rows if r["case"].startswith(kernel) and r["paper"]]
        assert f"{kernel} {min(errs):.2f} to {max(errs):.2f} %" in text


def test_quick_figures_agree_with_the_full_run(quick_run):
    """Each quick-protocol test error lies within the tolerance of
    ``FullRunFigure`` (conftest) of the full run's: the stored quick run's gap
    (1000 training digits against 7291) plus three binomial standard errors
    on 500 test digits (the full run has one split, so no spread of its own)."""
    text, rows = quick_run
    assert "1000 training / 500 test digits" in text
    got = {r["case"]: r["error"] for r in rows}
    expected = {k: FullRunFigure(v, 0.0, QUICK[k], 500) for k, v in FULL.items()}
    assert not off_the_full_run(got, expected)


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


def test_smoothing_window():
    """radius=1 cuts the Gaussian to a 3 × 3 window: a lit pixel reaches its
    eight neighbours only; the whole σ = 2 Gaussian reaches further."""
    X = np.zeros((1, 256))
    X[0, 8 * 16 + 8] = 1.0
    cut = smooth(X, radius=1)[0].reshape(16, 16)
    whole = smooth(X)[0].reshape(16, 16)
    assert np.all(cut[7:10, 7:10] > -1.0)
    assert np.allclose(np.delete(np.delete(cut, [7, 8, 9], 0), [7, 8, 9], 1), -1.0)
    assert whole[8, 11] > -1.0 and np.isclose(cut[8, 11], -1.0)
    # The 3 × 3 window keeps more of the pixel than the whole Gaussian.
    assert cut[8, 8] > whole[8, 8]
