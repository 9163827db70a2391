"""The blocked RFLSA pass and the blocked path scores against a plain NumPy
reference: the in-order forward selection column by column (classical
Gram–Schmidt applied twice, the same pruning rule), and every stage's decision
values from a triangular solve. The support vectors (in order) and the
validation accuracies of every stage must be the same, on Ringnorm, the two
spirals, and random data (two and three classes)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from localsvm_experiments.flsa import gamma_scale, load_split
from scipy.linalg import solve_triangular
from sklearn.datasets import make_classification
from sklearn.utils import check_random_state

from localsvm import FLSAClassifier, RFLSAClassifier
from localsvm.datasets import load_two_spirals
from localsvm.kernels import KernelSpec, kernel_matrix_numpy


def reference_in_order(X, t, order, gamma, max_terms, tol):
    """Forward selection of the columns ``K(X, X[order])`` in that order: the
    selected positions, ``R`` and ``z``."""
    n = X.shape[0]
    spec = KernelSpec("rbf", gamma=gamma)
    U = [np.full(n, 1.0 / np.sqrt(n))]
    r_cols = [np.array([np.sqrt(n)])]
    z = [t.sum() / np.sqrt(n)]
    selected = []
    for pos, c in enumerate(order):
        if len(selected) == max_terms:
            break
        col = kernel_matrix_numpy(spec, X, X[c : c + 1])[:, 0]
        norm2 = col @ col
        q = col.copy()
        coef = np.zeros(len(U))
        Q = np.array(U).T
        for _ in range(2):
            h = Q.T @ q
            q -= Q @ h
            coef += h
        sq = q @ q
        if sq <= tol * tol * norm2:
            continue
        u = q / np.sqrt(sq)
        U.append(u)
        r_cols.append(np.append(coef, np.sqrt(sq)))
        z.append(u @ t)
        selected.append(pos)
    k = len(selected)
    R = np.zeros((k + 1, k + 1))
    for j, rc in enumerate(r_cols):
        R[: rc.size, j] = rc
    return np.asarray(order)[selected], R, np.array(z)


def reference_scores(X, Xv, yv, classes, paths, gamma):
    """Accuracy of every stage: ``u = R⁻ᵀ [1, K(x, S)]`` by a triangular
    solve, the decision values ``cumsum(z · u)``."""
    spec = KernelSpec("rbf", gamma=gamma)
    K = max(len(s) for s, _, _ in paths)
    dec = np.empty((K + 1, Xv.shape[0], len(paths)))
    for c, (support, R, z) in enumerate(paths):
        k = len(support)
        phi = np.column_stack([np.ones(Xv.shape[0]), kernel_matrix_numpy(spec, Xv, X[support])])
        u = solve_triangular(R, phi.T, trans="T", lower=False)
        staged = np.cumsum(z[:, None] * u, axis=0)
        dec[: k + 1, :, c] = staged
        dec[k + 1 :, :, c] = staged[-1]
    if len(paths) == 1:
        pred = classes[(dec[..., 0] > 0).astype(np.intp)]
    else:
        pred = classes[np.argmax(dec, axis=-1)]
    return (pred == yv).mean(axis=1), dec


def _ringnorm():
    s = load_split("ringnorm", 0, (3000, 4400))
    return s.X_train, s.y_train, s.X_test, s.y_test, gamma_scale(s.X_train), 300


def _spirals():
    d = load_two_spirals()
    return d.X, d.y, d.X, d.y, 0.5, 180


def _random3():
    rng = np.random.RandomState(3)
    X, y = rng.randn(500, 6), rng.randint(0, 3, 500)
    return X[:300], y[:300], X[300:], y[300:], 0.3, 120


def _random2():
    X, y = make_classification(n_samples=700, n_features=8, random_state=4)
    return X[:400], y[:400], X[400:], y[400:], 0.2, 150


CASES = {"ringnorm": _ringnorm, "spirals": _spirals, "random3": _random3, "random2": _random2}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rflsa_path_equals_the_reference(name):
    X, y, Xv, yv, gamma, k = CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = RFLSAClassifier(n_support=k, gamma=gamma, random_state=0).fit(X, y)
    order = check_random_state(0).permutation(X.shape[0])
    classes = clf.classes_
    targets = [1] if classes.size == 2 else range(classes.size)
    paths = []
    for c, path in zip(targets, clf.path_, strict=True):
        t = np.where(y == classes[c], 1.0, -1.0)
        support, R, z = reference_in_order(X, t, order, gamma, k, clf.tol)
        np.testing.assert_array_equal(path.support, support)
        np.testing.assert_allclose(path.R, R, rtol=1e-8, atol=1e-8 * np.abs(R).max())
        np.testing.assert_allclose(path.z, z, rtol=1e-8, atol=1e-8 * np.abs(z).max())
        paths.append((support, R, z))
    want, dec = reference_scores(X, Xv, yv, classes, paths, gamma)
    got = clf.path_decision_function(Xv)
    got = got[..., None] if classes.size == 2 else got
    scale = np.abs(dec).max()
    np.testing.assert_allclose(got, dec, rtol=0, atol=1e-6 * scale)
    np.testing.assert_array_equal(clf.path_score(Xv, yv), want)


@pytest.mark.parametrize("name", ["spirals", "random3"])
def test_greedy_path_scores_equal_the_reference(name):
    X, y, Xv, yv, gamma, k = CASES[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = FLSAClassifier(n_support=k, gamma=gamma).fit(X, y)
    paths = [(p.support, p.R, p.z) for p in clf.path_]
    want, dec = reference_scores(X, Xv, yv, clf.classes_, paths, gamma)
    np.testing.assert_array_equal(clf.path_score(Xv, yv), want)
    got = clf.path_decision_function(Xv, max_n_support=k // 2)
    got = got[..., None] if clf.classes_.size == 2 else got
    np.testing.assert_allclose(got, dec[: k // 2 + 1], rtol=0, atol=1e-6 * np.abs(dec).max())
