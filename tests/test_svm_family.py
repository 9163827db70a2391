"""SVR, NuSVR, OneClassSVM and NuSVC against scikit-learn's (LIBSVM), and
SVC's remaining drop-in behaviours (sparse attributes, C=inf, sample
weights <= 0, read-only coef_, callable kernels on non-numeric X)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import svm
from sklearn.datasets import load_iris, make_blobs, make_friedman1, make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import pairwise_kernels
from sklearn.preprocessing import StandardScaler

from localsvm import SVC, SVR, KernelSpec, NuSVC, NuSVR, OneClassSVM, QPProblem, get_backend


def regression_sets():
    X1, y1 = make_friedman1(n_samples=400, random_state=0)
    X2, y2 = make_regression(n_samples=300, n_features=6, noise=10.0, random_state=1)
    X2 = StandardScaler().fit_transform(X2)
    y2 = y2 / y2.std()
    X3 = np.linspace(-3, 3, 150)[:, None]
    y3 = np.sin(2 * X3[:, 0]) + 0.1 * np.random.RandomState(2).randn(150)
    # 80 features: the solver shares each example's kernel column between
    # its two variables (the core's SHARED_ROWS_MIN_FEATURES is 64).
    X4, y4 = make_regression(n_samples=250, n_features=80, noise=5.0, random_state=3)
    X4 = StandardScaler().fit_transform(X4)
    y4 = y4 / y4.std()
    return [("friedman1", X1, y1), ("regression", X2, y2), ("sine", X3, y3), ("wide", X4, y4)]


def kernel_of(model, X, Z):
    """The kernel matrix of a fitted scikit-learn model."""
    params = {"gamma": model._gamma}
    if model.kernel == "poly":
        params.update(degree=model.degree, coef0=model.coef0)
    if model.kernel == "linear":
        return X @ Z.T
    return pairwise_kernels(X, Z, metric=model.kernel, **params)


def svr_objective(c, K, y, eps):
    """ε-SVR's dual objective at c = α − α*: ½cᵀKc + ε‖c‖₁ − yᵀc."""
    return 0.5 * c @ K @ c + eps * np.abs(c).sum() - y @ c


@pytest.mark.parametrize(
    "name, X, y", regression_sets(), ids=lambda v: v if isinstance(v, str) else ""
)
@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_svr_agrees_with_sklearn(name, X, y, kernel):
    kw = dict(kernel=kernel, C=2.0, epsilon=0.1 * y.std(), tol=1e-4)
    ours = SVR(**kw, precision="float64").fit(X, y)
    theirs = svm.SVR(**kw).fit(X, y)
    assert np.abs(ours.predict(X) - theirs.predict(X)).max() <= 1e-2 * y.std()
    # The same dual objective (computed from each model's coefficients).
    K = kernel_of(theirs, X, X)
    c_ours = np.zeros(len(y))
    c_ours[ours.support_] = ours.dual_coef_[0]
    c_theirs = np.zeros(len(y))
    c_theirs[theirs.support_] = theirs.dual_coef_[0]
    f_ours = svr_objective(c_ours, K, y, kw["epsilon"])
    f_theirs = svr_objective(c_theirs, K, y, kw["epsilon"])
    assert abs(f_ours - f_theirs) <= 1e-3 * abs(f_theirs)
    assert abs(ours.dual_objective_ - f_ours) <= 1e-6 * max(1.0, abs(f_ours))
    # Almost the same support set (points on the tube's edge may differ).
    sym = np.setxor1d(ours.support_, theirs.support_).size
    assert sym <= max(2, 0.02 * len(y))
    assert ours.n_support_.tolist() == [ours.support_.size]
    assert ours.fit_status_ == 0 and isinstance(ours.n_iter_, int)
    if kernel == "linear":
        np.testing.assert_allclose(ours.coef_, theirs.coef_, atol=2e-2 * np.abs(theirs.coef_).max())


@pytest.mark.parametrize(
    "name, X, y", regression_sets(), ids=lambda v: v if isinstance(v, str) else ""
)
@pytest.mark.parametrize("nu", [0.2, 0.6])
def test_nusvr_agrees_with_sklearn(name, X, y, nu):
    kw = dict(nu=nu, C=2.0, tol=1e-4)
    ours = NuSVR(**kw, precision="float64").fit(X, y)
    theirs = svm.NuSVR(**kw).fit(X, y)
    assert np.abs(ours.predict(X) - theirs.predict(X)).max() <= 1e-2 * y.std()
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-2 * y.std())
    # ν bounds the fraction of support vectors from below.
    assert ours.support_.size >= nu * len(y) - 1
    assert ours.epsilon_ >= 0
    sym = np.setxor1d(ours.support_, theirs.support_).size
    assert sym <= max(2, 0.02 * len(y))


def one_class_sets():
    X1, _ = make_blobs(n_samples=300, centers=2, random_state=0)
    X2 = np.random.RandomState(3).randn(250, 4)
    X3, _ = make_friedman1(n_samples=200, random_state=0)
    return [("blobs", X1), ("gauss", X2), ("friedman", X3)]


@pytest.mark.parametrize("name, X", one_class_sets(), ids=lambda v: v if isinstance(v, str) else "")
@pytest.mark.parametrize("nu", [0.05, 0.3, 0.7])
def test_one_class_agrees_with_sklearn(name, X, nu):
    ours = OneClassSVM(nu=nu, tol=1e-5, precision="float64").fit(X)
    theirs = svm.OneClassSVM(nu=nu, tol=1e-5).fit(X)
    # Inlier labels on fresh points (the free support vectors sit on the
    # boundary, where the sign is rounding).
    rng = np.random.RandomState(0)
    test = X[rng.randint(0, len(X), 400)] + 0.3 * X.std(axis=0) * rng.randn(400, X.shape[1])
    assert np.mean(ours.predict(test) == theirs.predict(test)) >= 0.995
    scale = np.abs(theirs.score_samples(X)).max()
    np.testing.assert_allclose(ours.score_samples(X), theirs.score_samples(X), atol=1e-3 * scale)
    np.testing.assert_allclose(ours.offset_, theirs.offset_, rtol=1e-3)
    np.testing.assert_allclose(
        ours.decision_function(X), ours.score_samples(X) - ours.offset_, atol=1e-9
    )
    # Σ α = ν·n, and the objective ½αᵀKα is scikit-learn's.
    np.testing.assert_allclose(ours.dual_coef_.sum(), nu * len(X), rtol=1e-9)
    K = kernel_of(theirs, X, X)
    a_t = np.zeros(len(X))
    a_t[theirs.support_] = theirs.dual_coef_[0]
    f_t = 0.5 * a_t @ K @ a_t
    assert abs(ours.dual_objective_ - f_t) <= 1e-3 * f_t
    assert np.setxor1d(ours.support_, theirs.support_).size <= max(2, 0.02 * len(X))


def test_one_class_nu_one_keeps_every_sample():
    # Every α at its bound: scikit-learn's intercept is infinite there
    # (it raises); ours takes the finite end of the interval ρ may lie in.
    X, _ = make_blobs(n_samples=100, random_state=0)
    est = OneClassSVM(nu=1.0).fit(X)
    assert est.support_.size == 100
    np.testing.assert_allclose(est.dual_coef_, 1.0)
    assert np.isfinite(est.offset_)


@pytest.mark.parametrize("nu", [0.1, 0.3, 0.5])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_nusvc_agrees_with_sklearn(nu, kernel):
    X, y = load_iris(return_X_y=True)
    ours = NuSVC(nu=nu, kernel=kernel, tol=1e-5, precision="float64").fit(X, y)
    theirs = svm.NuSVC(nu=nu, kernel=kernel, tol=1e-5).fit(X, y)
    assert np.mean(ours.predict(X) == theirs.predict(X)) >= 0.995
    # The ν-duals' coefficients are divided by r, which is small for
    # overlapping pairs: their tolerance grows by 1/r, so a few support
    # vectors at a bound and a few decision values may differ.
    assert np.setxor1d(ours.support_, theirs.support_).size <= 0.05 * ours.support_.size
    d_o, d_t = ours.decision_function(X), theirs.decision_function(X)
    close = np.isclose(d_o, d_t, atol=2e-2 * np.abs(d_t).max(), rtol=1e-2)
    assert close.mean() >= 0.99


def test_nusvc_binary_matches_sklearn_sign_conventions():
    X, y = make_blobs(n_samples=200, centers=2, cluster_std=1.5, random_state=0)
    ours = NuSVC(nu=0.4, tol=1e-6, precision="float64").fit(X, y)
    theirs = svm.NuSVC(nu=0.4, tol=1e-6).fit(X, y)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    scale = np.abs(theirs.dual_coef_).max()
    np.testing.assert_allclose(ours.dual_coef_, theirs.dual_coef_, atol=1e-2 * scale)
    np.testing.assert_allclose(ours.intercept_, theirs.intercept_, atol=1e-2 * scale)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))


def test_nu_solver_keeps_both_label_sums():
    # The per-label dual through the backend interface: each label set's
    # sum stays at its start value.
    X, y = make_blobs(n_samples=80, centers=2, random_state=1)
    labels = np.where(y == 0, 1.0, -1.0)
    start = np.zeros(80)
    start[labels > 0] = 0.3
    start[labels < 0] = 0.2
    problem = QPProblem(
        X=X, y=labels, upper=np.ones(80), p=np.zeros(80), alpha0=start, equality_kind="per_label"
    )
    sol = get_backend("rust").solve(problem)
    assert sol.converged
    for side in (1.0, -1.0):
        np.testing.assert_allclose(
            sol.alpha[labels == side].sum(), start[labels == side].sum(), rtol=1e-9
        )
    assert sol.r != 0.0
    # The scipy reference (SLSQP, no shared code) finds the same optimum,
    # ρ and r.
    ref = get_backend("scipy").solve(problem)
    assert ref.converged
    np.testing.assert_allclose(sol.objective, ref.objective, rtol=1e-4)
    np.testing.assert_allclose([sol.rho, sol.r], [ref.rho, ref.r], atol=1e-3)


def test_one_class_dual_matches_the_scipy_reference():
    X, _ = make_blobs(n_samples=60, random_state=2)
    start = np.zeros(60)
    start[:18] = 1.0  # ν = 0.3
    problem = QPProblem(
        X=X,
        y=np.ones(60),
        upper=np.ones(60),
        p=np.zeros(60),
        alpha0=start,
        equality_kind="start",
        kernel=KernelSpec("rbf", gamma=0.1),
    )
    ours = get_backend("rust").solve(problem)
    ref = get_backend("scipy").solve(problem)
    np.testing.assert_allclose(ours.alpha.sum(), 18.0, rtol=1e-9)
    np.testing.assert_allclose(ours.objective, ref.objective, rtol=1e-4)
    np.testing.assert_allclose(ours.rho, ref.rho, atol=1e-3)


def test_backends_without_the_new_equalities_refuse_them():
    from localsvm import Capabilities, SolverBackend

    class Plain(SolverBackend):
        name = "plain"
        capabilities = Capabilities()

        def solve(self, problem):  # pragma: no cover - never called
            raise AssertionError

    problem = QPProblem(
        X=np.eye(2), y=np.ones(2), upper=np.ones(2), alpha0=np.full(2, 0.5), equality_kind="start"
    )
    assert "equality-start" in Plain().check(problem)


@pytest.mark.parametrize(
    "est, message",
    [
        (NuSVC(nu=0.0), "nu"),
        (NuSVC(nu=1.5), "nu"),
        (NuSVR(nu=0.0), "nu"),
        (OneClassSVM(nu=1.01), "nu"),
        (SVR(epsilon=-0.1), "epsilon"),
        (SVR(C=0.0), "C"),
        (NuSVR(C=-1.0), "C"),
    ],
)
def test_bad_parameters_are_refused(est, message):
    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(ValueError, match=message):
        est.fit(X, y)


def test_infeasible_nu_is_refused_with_libsvms_message():
    X, y = make_blobs(n_samples=40, centers=2, random_state=0)
    y = np.r_[np.zeros(5), np.ones(35)]
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        NuSVC(nu=0.9).fit(X, y)
    with pytest.raises(ValueError, match="specified nu is infeasible"):
        svm.NuSVC(nu=0.9).fit(X, y)
    NuSVC(nu=0.2).fit(X, y)  # feasible: 0.2 · 40 / 2 <= 5


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_regression_targets_must_be_finite(bad):
    X, y = make_friedman1(n_samples=30, random_state=0)
    y[3] = bad
    for est in (SVR(), NuSVR()):
        with pytest.raises(ValueError, match="Input y contains"):
            est.fit(X, y)


def test_one_class_ignores_y_as_sklearn():
    X, _ = make_blobs(n_samples=50, random_state=0)
    a = OneClassSVM(precision="float64").fit(X, np.arange(50))
    b = OneClassSVM(precision="float64").fit(X)
    np.testing.assert_array_equal(a.support_, b.support_)
    assert set(np.unique(a.predict(X))) <= {-1, 1}


@pytest.mark.parametrize("Est", [SVR, NuSVR, OneClassSVM])
def test_sparse_fit_gives_sparse_attributes_and_same_model(Est):
    X, y = make_friedman1(n_samples=120, random_state=0)
    X[X < 0.5] = 0.0
    Xs = sp.csr_matrix(X)
    kw = dict(kernel="linear", precision="float64")
    dense = Est(**kw).fit(X, y)
    sparse = Est(**kw).fit(Xs, y)
    for name in ("support_vectors_", "dual_coef_", "coef_"):
        assert sp.issparse(getattr(sparse, name)), name
    np.testing.assert_array_equal(dense.support_, sparse.support_)
    np.testing.assert_allclose(sparse.coef_.toarray(), dense.coef_, atol=1e-6)
    out = "predict" if Est is not OneClassSVM else "decision_function"
    np.testing.assert_allclose(getattr(sparse, out)(Xs), getattr(dense, out)(X), atol=1e-6)


@pytest.mark.parametrize("Est", [SVR, NuSVR])
def test_zero_weight_samples_are_left_out(Est):
    X, y = make_friedman1(n_samples=80, random_state=0)
    sw = np.ones(80)
    sw[:10] = 0.0
    sw[10:15] = -2.0
    kw = dict(gamma=0.3, tol=1e-6, precision="float64")
    weighted = Est(**kw).fit(X, y, sample_weight=sw)
    dropped = Est(**kw).fit(X[15:], y[15:])
    np.testing.assert_allclose(weighted.predict(X), dropped.predict(X), atol=1e-4)
    assert weighted.support_.min() >= 15
    with pytest.raises(ValueError, match="all samples have zero or negative weights"):
        Est().fit(X, y, sample_weight=np.zeros(80))


# ------------------------------------------------------- SVC's behaviours


def test_svc_sparse_fit_gives_sparse_attributes():
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    X[X < 1.5] = 0
    ours = SVC(kernel="linear").fit(sp.csr_matrix(X), y)
    theirs = svm.SVC(kernel="linear").fit(sp.csr_matrix(X), y)
    for name in ("support_vectors_", "dual_coef_", "coef_"):
        assert sp.issparse(getattr(ours, name)) == sp.issparse(getattr(theirs, name)), name
    np.testing.assert_allclose(ours.dual_coef_.toarray(), theirs.dual_coef_.toarray(), atol=1e-2)
    np.testing.assert_allclose(ours.coef_.toarray(), theirs.coef_.toarray(), atol=5e-2)


def test_svc_hard_margin():
    X, y = make_blobs(n_samples=60, centers=2, cluster_std=0.6, random_state=0)
    ours = SVC(C=np.inf, kernel="linear").fit(X, y)
    theirs = svm.SVC(C=np.inf, kernel="linear").fit(X, y)
    # Separable: every training point on its side, with margin at least 1.
    d = ours.decision_function(X) * np.where(y == ours.classes_[1], 1, -1)
    assert d.min() >= 1 - 1e-2
    np.testing.assert_allclose(ours.coef_, theirs.coef_, rtol=1e-2)
    np.testing.assert_array_equal(ours.support_, theirs.support_)
    # The same as a large finite C on this separable set.
    big = SVC(C=1e6, kernel="linear").fit(X, y)
    np.testing.assert_allclose(ours.coef_, big.coef_, rtol=1e-3)


def test_svc_weights_at_most_zero_drop_samples():
    X, y = make_blobs(n_samples=60, centers=2, random_state=0)
    sw = np.ones(60)
    sw[:10] = 0.0
    sw[10:15] = -1.0
    ours = SVC(kernel="linear", tol=1e-6).fit(X, y, sample_weight=sw)
    ref = SVC(kernel="linear", tol=1e-6).fit(X[15:], y[15:])
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=1e-4)
    # Indices into X as given (scikit-learn's index the kept samples instead,
    # so that its support_vectors_ differ from X[support_]).
    np.testing.assert_array_equal(ours.support_vectors_, X[ours.support_])
    with pytest.raises(ValueError, match=r"^Invalid input - all samples have zero or negative"):
        SVC().fit(X, y, sample_weight=-np.ones(60))
    one_class = np.where(y == 0, 1.0, -1.0)
    with pytest.raises(ValueError, match=r"^Invalid input - all samples with positive weights"):
        SVC().fit(X, y, sample_weight=one_class)


@pytest.mark.parametrize("sparse", [False, True])
def test_svc_coef_is_read_only(sparse):
    X, y = load_iris(return_X_y=True)
    clf = SVC(kernel="linear").fit(sp.csr_matrix(X) if sparse else X, y)
    coef = clf.coef_
    with pytest.raises(ValueError, match="read-only"):
        if sparse:
            coef.data[0] = 0.0
        else:
            coef[0, 0] = 0.0
    with pytest.raises(AttributeError):
        clf.coef_ = np.zeros((3, 4))


def test_svc_callable_kernel_takes_strings():
    def length_kernel(A, B):
        a = np.array([len(s) for s in A], dtype=float)
        b = np.array([len(s) for s in B], dtype=float)
        return np.exp(-((a[:, None] - b[None, :]) ** 2))

    X = ["a", "bb", "c", "dddd", "eeeee", "ff", "g", "hhhhhh"]
    y = [0, 0, 0, 1, 1, 0, 0, 1]
    ours = SVC(kernel=length_kernel).fit(X, y)
    theirs = svm.SVC(kernel=length_kernel).fit(X, y)
    test = ["zz", "yyyyy", "x"]
    np.testing.assert_array_equal(ours.predict(test), theirs.predict(test))
    np.testing.assert_allclose(
        ours.decision_function(test), theirs.decision_function(test), atol=1e-3
    )
    assert ours.support_vectors_ == [X[i] for i in ours.support_]


def _first_letter_kernel(A, B):
    """1 + [first letters equal]: a kernel on rows of strings."""
    return np.array([[1.0 + float(a[0] == b[0]) for b in B] for a in A])


def test_svc_callable_kernel_takes_an_object_array_of_strings():
    # An object array converts to float only when its entries do: strings
    # reach the callable as given, as in scikit-learn.
    X = np.array([["a", "b"]] * 20 + [["c", "d"]] * 20, dtype=object)
    y = np.array([0] * 15 + [1] * 5 + [1] * 15 + [0] * 5)
    ours = SVC(kernel=_first_letter_kernel).fit(X, y)
    theirs = svm.SVC(kernel=_first_letter_kernel).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(X), atol=1e-3)


@pytest.mark.parametrize("name", ["SVR", "NuSVR", "OneClassSVM"])
@pytest.mark.parametrize("data", ["numbers", "strings"])
def test_family_callable_kernel_matches_sklearn(name, data):
    ours_cls, theirs_cls = {"SVR": (SVR, svm.SVR), "NuSVR": (NuSVR, svm.NuSVR)}.get(
        name, (OneClassSVM, svm.OneClassSVM)
    )
    if data == "numbers":
        X, y = make_friedman1(n_samples=60, random_state=0)
        test = X[:10] + 0.01

        def kernel(A, B):
            return (np.asarray(A) @ np.asarray(B).T + 1.0) ** 2

    else:
        words = ["apple", "avocado", "banana", "blueberry", "cherry", "cranberry"]
        X = [words[i % 6] + str(i) for i in range(48)]
        y = np.array([float(i % 6) + 0.1 * (i % 5) for i in range(48)])
        test = ["apricot", "bean", "cab"]

        def kernel(A, B):
            a = np.array([ord(w[0]) for w in A], dtype=float)
            b = np.array([ord(w[0]) for w in B], dtype=float)
            return np.exp(-0.5 * (a[:, None] - b[None, :]) ** 2)

    target = None if name == "OneClassSVM" else y
    ours = ours_cls(kernel=kernel).fit(X, target)
    theirs = theirs_cls(kernel=kernel).fit(X, target)
    np.testing.assert_array_equal(np.sort(ours.support_), np.sort(theirs.support_))
    values = "decision_function" if name == "OneClassSVM" else "predict"
    np.testing.assert_allclose(
        getattr(ours, values)(test), getattr(theirs, values)(test), rtol=1e-3, atol=1e-3
    )
    if data == "strings":
        assert ours.support_vectors_ == [X[i] for i in ours.support_]
    else:
        np.testing.assert_array_equal(ours.support_vectors_, X[ours.support_])
    # The callable's result is checked at prediction too.
    ours.set_params(kernel=lambda A, B: np.zeros((len(A), 1)))
    with pytest.raises(ValueError, match="must have shape"):
        ours.predict(test)


@pytest.mark.parametrize("Est", [SVR, NuSVR, OneClassSVM, NuSVC])
def test_pickle_round_trip(Est):
    import pickle

    X, y = make_blobs(n_samples=50, centers=2, random_state=0)
    est = Est().fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


@pytest.mark.parametrize("Est", [SVR, NuSVR, OneClassSVM])
def test_verbose_fit_reports_the_solve(Est, caplog):
    import logging

    X, y = make_friedman1(n_samples=80, random_state=0)
    with caplog.at_level(logging.INFO, logger="localsvm"):
        Est(verbose=2).fit(X, y)
    assert any(f"{Est.__name__} fit:" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- nu-SVC margin


def _libsvm_nu_labels(X, y, nu, kernel, gamma, tol):
    """Training labels of libsvm-official's nu-SVC (the C library itself)."""
    svmutil = pytest.importorskip("libsvm.svmutil")
    t = {"linear": 0, "rbf": 2}[kernel]
    labels = [1.0 if v == y.max() else -1.0 for v in y]
    rows = [[float(v) for v in row] for row in X]
    param = svmutil.svm_parameter(f"-s 1 -t {t} -n {nu} -g {gamma} -e {tol} -q")
    model = svmutil.svm_train(svmutil.svm_problem(labels, rows), param)
    pred = np.array(svmutil.svm_predict(labels, rows, model, "-q")[0])
    return np.where(pred > 0, y.max(), y.min())


def _nu_sets():
    rng = np.random.RandomState(1)
    X = rng.randn(120, 2)
    yield "overlap", X, (rng.rand(120) > 0.5).astype(int)
    X = rng.randn(120, 2)
    yield "separable", X, (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    X = rng.randn(60, 2)
    y = (rng.rand(60) > 0.5).astype(int)
    X[y == 1] += 1e-6  # near-duplicates with opposite labels
    yield "near-duplicates", X, y
    X = rng.randn(80, 3) * 1e3
    yield "large", X, (X[:, 0] > 0).astype(int)
    X = np.array([[0, 421.5], [-797.2, 0], [-663, 365.8], [0, 0], [0, -415], [266.2, 999]])
    yield "six", X, np.array([0, 1, 1, 1, 0, 0])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_nusvc_refuses_or_agrees_with_libsvm_on_a_grid_of_nu(kernel):
    # Near r = 0 the coefficients alpha / r are not determined (LIBSVM
    # returns them anyway, of size 1/r and with arbitrary labels): a
    # ValueError, or LIBSVM's labels. tol is tight enough for both solvers'
    # labels to be settled on the points inside the margin.
    refused = agreed = 0
    for name, X, y in _nu_sets():
        gamma = 1.0 / (X.shape[1] * X.var())
        for nu in (1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
            try:
                ours = NuSVC(nu=nu, kernel=kernel, gamma=gamma, tol=1e-5).fit(X, y)
            except ValueError as exc:
                assert "nu" in str(exc), (name, nu, str(exc))
                refused += 1
                continue
            assert np.all(np.isfinite(ours.dual_coef_)), (name, nu)
            theirs = _libsvm_nu_labels(X, y, nu, kernel, gamma, 1e-5)
            agreement = np.mean(ours.predict(X) == theirs)
            assert agreement >= 0.99, (name, nu, agreement)
            agreed += 1
    assert refused and agreed  # both outcomes occur on this grid


def test_nusvc_tiny_nu_is_refused_not_divided_by_zero():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 4)
    y = X[:, 0] + 0.5 * X[:, 1] > 0
    with pytest.raises(ValueError, match="margin variable r"):
        NuSVC(nu=1e-200).fit(X, y)


def test_nusvc_degenerate_margin_is_refused():
    # LIBSVM returns dual coefficients of about 3e9 here; the margin r is
    # at the rounding of kernel values of size 1e6.
    X = np.array([[0, 421.5], [-797.2, 0], [-663, 365.8], [0, 0], [0, -415], [266.2, 999]])
    y = np.array([0, 1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="margin variable r"):
        NuSVC(kernel="linear", nu=0.1).fit(X, y)


@pytest.mark.parametrize("name", ["linear", "poly", "rbf", "sigmoid", "precomputed"])
def test_nu_margin_floor_follows_the_kernel_value_scale(name):
    from localsvm.svc import kernel_value_scale

    rng = np.random.RandomState(0)
    X = rng.randn(30, 3) * 50.0
    spec = KernelSpec(name, gamma=0.01, coef0=1.0, degree=2)
    rows = np.arange(3, 25)
    S = float((X[rows] ** 2).sum(axis=1).max())
    want = {
        "linear": S,
        "poly": (0.01 * S + 1.0) ** 2,
        "rbf": max(1.0, 0.02 * S),
        "sigmoid": max(1.0, 0.01 * S + 1.0),
    }
    if name == "precomputed":
        K = X @ X.T
        assert kernel_value_scale(spec, K, rows) == np.abs(K[np.ix_(rows, rows)]).max()
    else:
        np.testing.assert_allclose(kernel_value_scale(spec, X, rows), want[name], rtol=1e-12)
        sparse = kernel_value_scale(spec, sp.csr_matrix(X), rows)
        np.testing.assert_allclose(sparse, want[name], rtol=1e-12)


def test_nusvc_at_the_feasibility_limit_is_refused():
    # nu = 2 · min(n_i, n_j) / n: every sample of the smaller class at its
    # bound, the margin unbounded above (LIBSVM's intercept is NaN).
    X, _ = make_blobs(n_samples=40, centers=2, random_state=0)
    y = np.r_[np.zeros(10), np.ones(30)]
    with pytest.raises(ValueError, match="largest nu"):
        NuSVC(nu=0.5).fit(X, y)
    NuSVC(nu=0.45).fit(X, y)


# ------------------------------------------------------------- non-finite C


def test_svr_hard_margin_matches_libsvm():
    X, y = make_regression(n_samples=80, n_features=3, noise=5, random_state=0)
    y = y / y.std()
    ours = SVR(C=np.inf, tol=1e-5).fit(X, y)
    theirs = svm.SVR(C=np.inf, tol=1e-5).fit(X, y)
    assert np.abs(ours.predict(X) - theirs.predict(X)).max() <= 1e-2 * y.std()


@pytest.mark.parametrize("C", [np.inf, np.nan, -np.inf])
def test_nusvr_refuses_non_finite_C(C):
    # nu-SVR's coefficients sum to C * nu * n: LIBSVM's model at C = inf is
    # not finite (scikit-learn raises after the fit).
    X, y = make_regression(n_samples=30, n_features=3, random_state=0)
    with pytest.raises(ValueError, match="'C' parameter of NuSVR"):
        NuSVR(C=C).fit(X, y)


@pytest.mark.parametrize(
    "name",
    ["SVC", "SVR", "NuSVR", "CellSVC", "LocalSVC", "ProfileSVC", "IncrementalSVC", "ClusterSVC"],
)
@pytest.mark.parametrize("C", [np.nan, -np.inf])
def test_nan_and_negative_infinite_C_are_refused_by_every_estimator(name, C):
    import localsvm

    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(ValueError, match=f"'C' parameter of {name}"):
        getattr(localsvm, name)(C=C).fit(X, y)


@pytest.mark.parametrize(
    "name", ["CellSVC", "LocalSVC", "ProfileSVC", "IncrementalSVC", "ClusterSVC"]
)
def test_estimators_without_a_hard_margin_refuse_infinite_C(name):
    import localsvm

    X, y = make_blobs(n_samples=30, centers=2, random_state=0)
    with pytest.raises(ValueError, match=f"'C' parameter of {name}"):
        getattr(localsvm, name)(C=np.inf).fit(X, y)


def test_hard_margin_with_a_cap_of_yours_keeps_the_capped_solve():
    X, y = make_blobs(n_samples=40, centers=2, cluster_std=3.0, random_state=0)
    with pytest.warns(ConvergenceWarning):
        est = SVC(C=np.inf, max_iter=1000).fit(X, y)
    assert est.fit_status_ == 1 and np.all(np.isfinite(est.dual_coef_))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("Est", "kw", "model"),
    [
        (SVC, {"kernel": "linear"}, "separates the classes"),
        (SVR, {"kernel": "linear", "epsilon": 0.01}, "fits every target within epsilon"),
    ],
)
def test_hard_margin_without_a_model_is_refused(Est, kw, model):
    # LIBSVM never stops on these (its coefficients grow without bound); the
    # solver's safety cap (10^7 iterations) does, and the fit refuses.
    rng = np.random.RandomState(0)
    X = rng.randn(40, 2)
    y = (rng.rand(40) > 0.5).astype(int) if Est is SVC else X[:, 0] + rng.randn(40)
    with pytest.raises(ValueError, match=f"C=inf .* no model {model}"):
        Est(C=np.inf, **kw).fit(X, y)
