"""The tolerance that the reproduction tests allow between a quick-protocol
figure and the full run's (``FullRunFigure`` in conftest)."""

from __future__ import annotations

import math

import pytest

from conftest import FullRunFigure, off_the_full_run


def test_tolerance_is_the_gap_plus_three_standard_errors():
    # Full run 90 ± 2 (%), quick run 87 on 400 test examples, 1 split:
    # gap 3, se = sqrt(4 + 0.9 * 0.1 * 1e4 / 400) = sqrt(6.25) = 2.5.
    e = FullRunFigure(full=90.0, full_std=2.0, quick=87.0, n_test=400)
    assert e.tolerance() == pytest.approx(3.0 + 3 * 2.5)
    # Two splits halve the variance.
    e2 = FullRunFigure(full=90.0, full_std=2.0, quick=87.0, n_test=400, repeats=2)
    assert e2.tolerance() == pytest.approx(3.0 + 3 * 2.5 / math.sqrt(2))


def test_a_figure_beyond_the_tolerance_is_reported():
    e = FullRunFigure(full=90.0, full_std=2.0, quick=87.0, n_test=400)  # tolerance 10.5
    assert not off_the_full_run({"a": 87.0}, {"a": e})
    assert not off_the_full_run({"a": 100.0}, {"a": e})
    assert off_the_full_run({"a": 79.0}, {"a": e}) == {"a": (79.0, 90.0, 10.5)}
    assert off_the_full_run({"a": float("nan")}, {"a": e})
    # A row on one side only is reported.
    assert off_the_full_run({"a": 90.0, "b": 90.0}, {"a": e})
