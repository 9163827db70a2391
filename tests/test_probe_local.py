"""A probe of LocalSVC, ProfileSVC, ClusterSVC, IncrementalSVC, the FLSA
classifiers, LIBSVM model files and the ONNX export: each test reproduces a
wrong answer, a crash or a refusal of valid input that the probe found, and
asserts the documented behaviour."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from localsvm import LocalSVC


def test_local_knn_with_more_neighbours_than_a_class_pair_holds():
    # k may be anything up to the training set's size; with three classes a
    # class pair holds fewer rows than that. The primal solver's anchors
    # used to measure their neighbours among the pair's rows only, so fit
    # refused such a k (and their neighbourhoods were not the ones the test
    # examples get: those are measured among every training example).
    # C=10 leaves free multipliers, so that each local bias is decided.
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 10)
    X = rng.normal(size=(30, 2)) + np.c_[y, np.zeros(30)]
    Xt = rng.normal(size=(15, 2)) + np.array([1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k in (21, 30):
            warm = LocalSVC(similarity="knn", k=k, C=10.0, tol=1e-6, n_jobs=1).fit(X, y)
            assert warm.solver_ == "primal"
            cold = LocalSVC(similarity="knn", k=k, C=10.0, tol=1e-6, warm_start=False, n_jobs=1)
            cold.fit(X, y)
            np.testing.assert_allclose(
                warm.decision_function(Xt), cold.decision_function(Xt), atol=1e-5
            )
            np.testing.assert_array_equal(warm.predict(Xt), cold.predict(Xt))
