"""Fuzz tests of every estimator: small random data with extreme magnitudes
(column scales from 1e-300 to 1e300, constant columns, duplicate rows),
random labels (one to four classes, classes of a single example) and random
parameters. Each fit either raises a clean ``ValueError`` / ``TypeError``
whose message names the cause, or gives finite decision values of the right
shape and predictions among the classes. Where the model is a plain C-SVM
(LocalSVC whose similarity is 1 everywhere, ProfileSVC with one cluster,
IncrementalSVC retraining on everything) it must agree with scikit-learn's
``SVC``. The SVC itself is fuzzed in ``test_precision.py``.

Derandomized and bounded (small data, iteration caps) so the default suite
stays fast."""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC as SkSVC

from localsvm import (
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    ProfileSVC,
    RFLSAClassifier,
)
from localsvm.similarity import compute_similarity

#: Words one of which a refusal must contain: the parameter or the problem
#: at fault. A bare "invalid input" would match none of them.
SPECIFIC = re.compile(
    r"overflow|underflow|not finite|NaN|infinit|float64|float32|"
    r"\b(C|gamma|bandwidth|k|n_clusters|n_support|dictionary_size|n_columns|ridge|"
    r"coef0|degree|threshold|epsilon|tol|max_iter|cv|n_splits|similarity)\b|"
    r"class|member|sample|fold|cluster|kernel|feature|label"
)

#: Exponents of the column scales.
EXPONENTS = [0, 0, 0, 3, -3, 30, -30, 150, -150, 300, -300]


@st.composite
def datasets(draw, max_classes=4, min_n=4, max_n=16):
    """A small data set with per-column scales, a constant column or
    duplicate rows now and then, and one to ``max_classes`` classes of
    which some may hold a single example."""
    seed = draw(st.integers(0, 2**16))
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    scales = 10.0 ** np.array([draw(st.sampled_from(EXPONENTS)) for _ in range(d)])
    X = rng.uniform(-1.0, 1.0, (n, d)) * scales
    if draw(st.booleans()):
        X[:, draw(st.integers(0, d - 1))] = draw(st.sampled_from([0.0, 1.0, 1e300, -1e-300]))
    if draw(st.booleans()):
        X[1] = X[0]
    # Two classes first: hypothesis favours the start of the list.
    n_classes = draw(st.sampled_from([c for c in (2, 3, 4, 2, 1) if c <= max_classes]))
    y = rng.integers(0, n_classes, n)
    # Tiny classes: the last class may hold one example only.
    if n_classes > 1 and draw(st.booleans()):
        y[y == n_classes - 1] = 0
        y[draw(st.integers(0, n - 1))] = n_classes - 1
    return X, y


def c_values():
    """C over 1e-6 … 1e12."""
    return st.integers(-6, 12).map(lambda e: float(10.0**e))


def gammas():
    return st.one_of(
        st.just("scale"),
        st.integers(-300, 300).map(lambda e: float(10.0**e)),
        st.floats(-3, 3).map(lambda e: float(10.0**e)),
    )


def _log(line: str) -> None:
    """Appends to ``LOCALSVM_FUZZ_LOG`` when set (what a long hunt met)."""
    path = os.environ.get("LOCALSVM_FUZZ_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line.replace("\n", " ") + "\n")


def _fit_or_refuse(make, X, y):
    """The fitted estimator with its decisions and predictions on ``X``, or
    None when it refused the data with a specific message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", UserWarning)
            est = make().fit(X, y)
            dec = np.asarray(est.decision_function(X))
            pred = np.asarray(est.predict(X))
    except (ValueError, TypeError) as err:
        msg = str(err)
        _log(f"refused {type(err).__name__}: {msg}")
        assert SPECIFIC.search(msg), f"vague refusal: {msg!r}"
        return None
    _log("fitted")
    classes = np.unique(y)
    assert np.array_equal(est.classes_, classes)
    assert pred.shape == (X.shape[0],)
    assert np.isin(pred, classes).all()
    shape = (X.shape[0],) if classes.size == 2 else (X.shape[0], classes.size)
    assert dec.shape == shape
    assert np.isfinite(dec).all(), dec
    return est, dec, pred


#: Examples per fuzz test; ``LOCALSVM_FUZZ_EXAMPLES`` raises it for a longer
#: hunt (with ``LOCALSVM_FUZZ_RANDOM=1`` drawing new examples each run).
EXAMPLES = int(os.environ.get("LOCALSVM_FUZZ_EXAMPLES", "25"))

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("LOCALSVM_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _sk_comparable(X):
    """Data whose linear kernel scikit-learn's float32 cache holds."""
    with np.errstate(all="ignore"):
        K = X @ X.T
    scale = np.abs(K).max()
    return np.isfinite(K).all() and 1e-20 < scale < 1e20


def _agrees_with_sklearn(dec, X, y, C, tol):
    """Our two-class decision values against scikit-learn's linear SVC."""
    sk = SkSVC(kernel="linear", C=C, tol=tol, max_iter=1_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk.fit(X, y)
    # No reference where scikit-learn itself stopped before convergence.
    assume(sk.fit_status_ == 0)
    ref = sk.decision_function(X)
    span = max(1.0, np.abs(ref).max())
    assert np.abs(dec - ref).max() <= 0.05 * span, (dec, ref)


# --------------------------------------------------------------- LocalSVC


@FUZZ
@given(
    data=datasets(),
    C=c_values(),
    similarity=st.sampled_from(["gaussian", "knn"]),
    bandwidth=st.integers(-5, 300).map(lambda e: float(10.0**e)),
    k=st.integers(1, 20),
    kernel=st.sampled_from(["linear", "rbf", "poly", "sigmoid"]),
    gamma=gammas(),
    warm_start=st.booleans(),
)
def test_local_svc_fuzz(data, C, similarity, bandwidth, k, kernel, gamma, warm_start):
    X, y = data
    _fit_or_refuse(
        lambda: LocalSVC(
            C=C,
            similarity=similarity,
            bandwidth=bandwidth,
            k=k,
            kernel=kernel,
            gamma=gamma,
            warm_start=warm_start,
            max_iter=20_000,
        ),
        X,
        y,
    )


@FUZZ
@given(data=datasets(max_classes=2), C=st.integers(-2, 3).map(lambda e: float(10.0**e)))
def test_local_svc_with_unit_similarity_is_scikit_learns_svc(data, C):
    # bandwidth 1e300: σ = exp(−‖x − z‖²/1e300) = 1 for data of moderate
    # scale, so every local problem is the plain SVM with box C.
    X, y = data
    X = X / np.abs(X).max(axis=0).clip(1e-300)
    assume(np.unique(y).size == 2)  # the data drew one class: not a two-class case
    out = _fit_or_refuse(lambda: LocalSVC(C=C, bandwidth=1e300, tol=1e-6), X, y)
    assert out is not None
    _agrees_with_sklearn(out[1], X, y, C, 1e-6)


# ------------------------------------------------------------- ProfileSVC


@FUZZ
@given(
    data=datasets(min_n=6),
    C=c_values(),
    n_clusters=st.integers(1, 4),
    clustering=st.sampled_from(["magkmeans", "magkmeans-greedy", "kmeans"]),
    bandwidth=st.integers(-5, 300).map(lambda e: float(10.0**e)),
    kernel=st.sampled_from(["linear", "rbf"]),
    gamma=gammas(),
)
def test_profile_svc_fuzz(data, C, n_clusters, clustering, bandwidth, kernel, gamma):
    X, y = data
    _fit_or_refuse(
        lambda: ProfileSVC(
            C=C,
            n_clusters=n_clusters,
            clustering=clustering,
            bandwidth=bandwidth,
            kernel=kernel,
            gamma=gamma,
            max_iter=100_000,
            random_state=0,
        ),
        X,
        y,
    )


@FUZZ
@given(data=datasets(max_classes=2, min_n=6), C=st.integers(-2, 3).map(lambda e: float(10.0**e)))
def test_profile_svc_with_one_cluster_is_scikit_learns_svc(data, C):
    X, y = data
    X = X / np.abs(X).max(axis=0).clip(1e-300)
    assume(np.unique(y).size == 2)  # the data drew one class: not a two-class case
    out = _fit_or_refuse(lambda: ProfileSVC(C=C, n_clusters=1, tol=1e-6, random_state=0), X, y)
    assert out is not None
    _agrees_with_sklearn(out[1], X, y, C, 1e-6)


# ------------------------------------------------------------------- FLSA


@FUZZ
@given(
    data=datasets(),
    estimator=st.sampled_from([FLSAClassifier, RFLSAClassifier]),
    n_support=st.integers(1, 20),
    dictionary_size=st.one_of(st.none(), st.integers(1, 20), st.floats(0.05, 1.0)),
    kernel=st.sampled_from(["linear", "rbf", "poly", "sigmoid"]),
    gamma=gammas(),
    tol=st.sampled_from([1e-12, 1e-6, 1e-2]),
    gram=st.sampled_from(["auto", "precomputed", "on_the_fly"]),
)
def test_flsa_fuzz(data, estimator, n_support, dictionary_size, kernel, gamma, tol, gram):
    X, y = data
    _fit_or_refuse(
        lambda: estimator(
            n_support=n_support,
            dictionary_size=dictionary_size,
            kernel=kernel,
            gamma=gamma,
            tol=tol,
            gram=gram,
            random_state=0,
        ),
        X,
        y,
    )


@settings(FUZZ, max_examples=max(1, EXAMPLES * 3 // 5))
@given(
    data=datasets(min_n=8),
    n_support=st.integers(1, 10),
    dictionary_size=st.one_of(st.none(), st.integers(1, 20), st.floats(0.1, 1.0)),
    kernel=st.sampled_from(["linear", "rbf"]),
    gamma=gammas(),
    cv=st.integers(2, 4),
)
def test_flsa_cv_fuzz(data, n_support, dictionary_size, kernel, gamma, cv):
    X, y = data
    _fit_or_refuse(
        lambda: FLSAClassifierCV(
            n_support=n_support,
            dictionary_size=dictionary_size,
            kernel=kernel,
            gamma=gamma,
            cv=cv,
            random_state=0,
        ),
        X,
        y,
    )


# ------------------------------------------------------------ Incremental


@FUZZ
@given(
    data=datasets(),
    C=c_values(),
    kernel=st.sampled_from(["linear", "rbf", "poly"]),
    gamma=gammas(),
    threshold=st.sampled_from([1e-300, 0.1, 0.9]),
    epsilon=st.sampled_from([0.0, 0.5, 2.0]),
    max_neighbors=st.integers(1, 10),
    reprocess=st.integers(0, 3),
    strategy=st.sampled_from(["local", "rebatch"]),
    multiclass=st.sampled_from(["ovo", "ovr"]),
)
def test_incremental_svc_fuzz(
    data, C, kernel, gamma, threshold, epsilon, max_neighbors, reprocess, strategy, multiclass
):
    X, y = data
    _fit_or_refuse(
        lambda: IncrementalSVC(
            C=C,
            kernel=kernel,
            gamma=gamma,
            threshold=threshold,
            epsilon=epsilon,
            max_neighbors=max_neighbors,
            reprocess=reprocess,
            strategy=strategy,
            multiclass=multiclass,
            max_iter=100_000,
        ),
        X,
        y,
    )


@FUZZ
@given(data=datasets(max_classes=2), C=st.integers(-2, 3).map(lambda e: float(10.0**e)))
def test_incremental_svc_rebatch_is_scikit_learns_svc(data, C):
    X, y = data
    X = X / np.abs(X).max(axis=0).clip(1e-300)
    assume(np.unique(y).size == 2)  # the data drew one class: not a two-class case
    out = _fit_or_refuse(
        lambda: IncrementalSVC(C=C, kernel="linear", strategy="rebatch", tol=1e-6), X, y
    )
    assert out is not None
    _agrees_with_sklearn(out[1], X, y, C, 1e-6)


def _probe_stream(huge: bool):
    """The probe's stream: 27 rows of 3 features up to 1e3 (a few ±1e300
    when ``huge``), labels alternating."""
    X = np.random.default_rng(0).uniform(-1e3, 1e3, size=(27, 3))
    if huge:
        X[5, 1], X[11, 0], X[20, 2] = 1e300, -1e300, 1e300
    return X, np.arange(27) % 2


@pytest.mark.parametrize("huge", [False, True])
def test_incremental_svc_refuses_kernel_values_outside_float64_up_front(huge):
    # γ = 1e-300 on features up to 1e3: every polynomial kernel value
    # underflows. SVC refuses at fit; the online learner used to grind
    # through 1e7 iterations per subproblem (a minute) before its
    # decision_function refused.
    X, y = _probe_stream(huge)
    svm = IncrementalSVC(C=1e300, kernel="poly", gamma=1e-300, threshold=0.01)
    with pytest.raises(ValueError, match="underflow float64"):
        svm.partial_fit(X[:1], y[:1], classes=[0, 1])
    # Over the whole stream the ±1e300 rows overflow, as in SVC's message.
    with pytest.raises(ValueError, match=("overflow" if huge else "underflow") + " float64"):
        IncrementalSVC(C=1e300, kernel="poly", gamma=1e-300).fit(X, y)


def test_incremental_svc_bounds_each_subproblem_solve():
    # γ = 1e-100 keeps the kernel in float64's range (values near 1e-281),
    # but with C = 1e300 SMO raises the multipliers one step per iteration
    # and never reaches tol: each solve must stop at the local batch's cap
    # max(1e5, 1000·w) (w ≤ max_neighbors + 1), not LIBSVM's 1e7.
    from localsvm._core import IncrementalLearner, Kernel, LearnOptions

    X, y = _probe_stream(False)
    labels = np.where(y == 1, 1.0, -1.0)
    cap = max(100_000, 1000 * (50 + 1))
    lr = IncrementalLearner(3, Kernel("poly", gamma=1e-100, degree=3))
    unconverged = 0
    for i in range(X.shape[0]):
        before = lr.n_iter
        res = lr.learn(
            X[i : i + 1],
            labels[i : i + 1],
            np.zeros(1, dtype=np.int64),
            np.array([i], dtype=np.int64),
            options=LearnOptions(1e300, 0.01),
        )
        assert lr.n_iter - before <= res.solves * cap, (i, lr.n_iter - before, res.solves)
        unconverged += res.unconverged
    assert unconverged > 0  # the cap, not convergence, ended the solves
    svm = IncrementalSVC(C=1e300, kernel="poly", gamma=1e-100, threshold=0.01)
    with pytest.warns(ConvergenceWarning, match="subproblem solves stopped"):
        for i in range(X.shape[0]):
            svm.partial_fit(X[i : i + 1], y[i : i + 1], classes=[0, 1])
    assert svm._learners[0].native.n_iter == lr.n_iter


# ------------------------------------------------------------- ClusterSVC


@FUZZ
@given(
    data=datasets(),
    C=c_values(),
    kernel=st.sampled_from(["linear", "rbf", "poly", "sigmoid"]),
    gamma=gammas(),
    n_columns=st.integers(1, 20),
    ridge=st.sampled_from([1e-12, 1e-4, 1.0]),
    normalize=st.booleans(),
)
def test_cluster_svc_fuzz(data, C, kernel, gamma, n_columns, ridge, normalize):
    # MCSVM trains one hyperplane per class against all others: no plain
    # SVM to compare with, so only the refusal-or-finite contract is checked.
    X, y = data
    _fit_or_refuse(
        lambda: ClusterSVC(
            C=C,
            kernel=kernel,
            gamma=gamma,
            n_columns=n_columns,
            ridge=ridge,
            normalize=normalize,
            max_iter=100_000,
            random_state=0,
        ),
        X,
        y,
    )


def test_agreement_cases_are_not_vacuous():
    # The agreement tests skip single-class draws; an ordinary problem must
    # really be compared.
    X, y = make_classification(n_samples=30, n_features=3, n_redundant=0, random_state=1)
    for make in (
        lambda: LocalSVC(C=1.0, bandwidth=1e300, tol=1e-6),
        lambda: ProfileSVC(C=1.0, n_clusters=1, tol=1e-6, random_state=0),
        lambda: IncrementalSVC(C=1.0, kernel="linear", strategy="rebatch", tol=1e-6),
    ):
        out = _fit_or_refuse(make, X, y)
        assert out is not None
        _agrees_with_sklearn(out[1], X, y, 1.0, 1e-6)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data_is_refused_by_every_estimator(bad):
    X, y = make_classification(n_samples=12, n_features=3, n_redundant=0, random_state=0)
    X[3, 1] = bad
    for make in (LocalSVC, ProfileSVC, FLSAClassifier, IncrementalSVC, ClusterSVC):
        with pytest.raises(ValueError, match=r"NaN|infinity"):
            make().fit(X, y)


def test_cluster_svc_whose_normals_vanish_stays_finite():
    # Found by the fuzz: a sigmoid kernel on two columns leaves every class's
    # hyperplane without a normal (‖w‖ = 0); the normalized distance was
    # |f|/tiny, which overflowed to −inf in decision_function.
    X = np.array([[0.27392337], [-0.46042657], [-0.91805295], [-0.96694473], [0.62654048]])
    y = np.array([1, 0, 0, 0, 0])
    clf = ClusterSVC(
        kernel="sigmoid", n_columns=2, ridge=1e-12, normalize=True, random_state=0
    ).fit(X, y)
    assert (clf.w_norm_ == 0).all()
    dec = clf.decision_function(X)
    assert np.isfinite(dec).all()
    # Every normal vanished: |f| alone ranks the classes.
    raw = ClusterSVC(
        kernel="sigmoid", n_columns=2, ridge=1e-12, normalize=False, random_state=0
    ).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), raw.predict(X))


def test_cluster_svc_class_without_normal_is_farthest():
    X, y = make_classification(n_samples=30, n_features=3, n_redundant=0, random_state=2)
    clf = ClusterSVC(kernel="linear", random_state=0).fit(X, y)
    clf.w_norm_ = clf.w_norm_.copy()
    clf.w_norm_[1] = 0.0
    d = clf.distances(X)
    assert np.isfinite(d).all()
    assert (clf.predict(X) == clf.classes_[0]).all()


@pytest.mark.parametrize("scale", [1e200, 1e-200])
def test_knn_similarity_does_not_depend_on_the_scale(scale):
    # Found by the fuzz: ‖x − z‖² overflowed (inf − inf = NaN) or underflowed
    # to 0 everywhere, and the k nearest became the first k by index.
    X, _ = make_classification(n_samples=20, n_features=3, n_redundant=0, random_state=3)
    ref = compute_similarity("knn", X, X[:6], k=5)
    out = compute_similarity("knn", X * scale, X[:6] * scale, k=5)
    np.testing.assert_array_equal(out, ref)
