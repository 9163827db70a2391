"""A panic in the Rust core reaches Python as ``RuntimeError`` and leaves the
interpreter usable: the test-only ``_core._raise_internal_panic`` panics
inside the same GIL-free runner every solver call goes through."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification

from localsvm import SVC, LocalSVC, _core


def test_a_panic_becomes_runtime_error_and_the_core_keeps_working():
    with pytest.raises(RuntimeError, match=r"internal error in the localsvm Rust core.*deliberate"):
        _core._raise_internal_panic()
    # A second panic is caught too (the runner is not poisoned) ...
    with pytest.raises(RuntimeError, match="internal error in the localsvm Rust core"):
        _core._raise_internal_panic()
    # ... and ordinary fits in the same interpreter still work.
    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    assert SVC().fit(X, y).score(X, y) > 0.8
    dec = LocalSVC().fit(X, y).decision_function(X[:5])
    assert np.isfinite(dec).all()
