"""``localsvm.ProfileSVC``: Profile SVM, one linear SVM per cluster of
similarity profiles (H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector
Machine and Its Efficient Algorithm", SIAM International Conference on Data
Mining (SDM), 2007, §4).

Each training example is described by its *profile*, its similarities to a
set of reference points (the test set in the paper, the training set or a
landmark sample here by default). The profiles are clustered with a strategy
that keeps every class in every cluster (MagKmeans), one SVM is trained per
cluster, and a test example is classified by the model of the cluster whose
members are, on average, most similar to it.

At scale (many examples, a kernel SVM per cluster) nothing is ``n × n``: the
profiles are measured against landmarks, the clustering samples
(:class:`~localsvm.clustering.MagKmeansClustering`), and a test example is
routed by its similarities to the landmarks (its nearest clustering centre)
or to a bounded set of cluster representatives.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from sklearn.utils.validation import _num_samples, check_random_state, validate_data

from ._base import (
    CACHE_CLASS_WEIGHT_CONSTRAINTS,
    FEATURE_KERNELS,
    BaseSVMClassifier,
    fit_method,
    labels_of_every_row,
    store_params,
)
from ._compat import Interval, StrOptions
from ._docstrings import X_ROWS, X_Y_CLASSES, fill
from ._memory import check_memory
from ._regions import RegionModelsMixin, region_iterations
from ._validation import prepare_input
from .clustering.base import ClusteringResult, check_n_clusters
from .kernels import resolve_gamma
from .parallel import effective_n_jobs, run_tasks
from .plugins import get_clustering
from .similarity import (
    bandwidth_parts,
    compute_similarity,
    get_similarity,
    similarity_kwargs,
    similarity_parameter_constraints,
)
from .svc import SVC

__all__ = ["ProfileSVC"]

#: With ``n_landmarks='auto'`` the profiles are measured against every
#: training example while the ``n × n`` profile matrix needs at most this many
#: bytes (256 MiB, n ≤ 5792); above it, against
#: ``min(AUTO_MAX_LANDMARKS, PROFILE_AUTO_BYTES // (8·n))`` landmarks drawn
#: with ``random_state``, so the profiles stay within this size.
PROFILE_AUTO_BYTES = 256 << 20

#: Above ``PROFILE_AUTO_BYTES``, ``n_landmarks='auto'`` draws at most this
#: many landmarks: the clustering's passes cost ``O(n · landmarks · κ)``.
AUTO_MAX_LANDMARKS = 256

#: ``n_clusters='auto'`` with the linear kernel: the paper's local linear
#: models, 10 clusters (at most ``n``).
AUTO_LINEAR_CLUSTERS = 10

#: ``n_clusters='auto'`` with any other kernel: one cluster per this many
#: training examples (see the parameter's measurements).
AUTO_CLUSTER_SIZE = 10_000

#: Each non-empty cluster is represented at prediction by its landmarks,
#: topped up with randomly drawn members to at least this many (or all its
#: members when it has fewer).
MIN_REPRESENTATIVES = 10

#: The clustering strategies hold a few profile-sized arrays besides the
#: profiles (squared values, distances to the assigned centroids): the up-front
#: memory check counts this many copies.
PROFILE_COPIES = 4

#: Test examples whose similarities to the training set are measured at once
#: by :meth:`ProfileSVC.assign`: bounds that ``n_train × block`` matrix.
BLOCK_BYTES = 64 << 20


class _ClusterSVM(SVC):
    """One cluster's :class:`~localsvm.SVC`: its unconverged solves are
    counted by the :class:`ProfileSVC` that owns it (one warning for all
    clusters), not warned about cluster by cluster."""

    def _warn_unconverged(self, converged, what, reasons=()) -> bool:
        return not all(bool(c) for c in converged)


def _fit_cluster(members, shared):
    """Fit one cluster's SVM on its members (None for a one-class cluster);
    a :func:`~localsvm.run_tasks` task, module-level so it pickles."""
    if members is None:
        return None
    members, gamma = members
    X, y_idx, weights, params = shared
    return _ClusterSVM(n_jobs=1, gamma=gamma, **params).fit(
        X[members], y_idx[members], sample_weight=None if weights is None else weights[members]
    )


def _describe_cluster(model) -> str:
    """A log line's account of one cluster's SVM."""
    if model is None:
        return "one class or empty, no SVM"
    return (
        f"{int(np.sum(model.n_iter_))} iterations, "
        f"{'converged' if model.fit_status_ == 0 else 'stopped before tol'}, "
        f"{model.support_.size} support vectors"
    )


def _one_cluster(profiles: np.ndarray) -> ClusteringResult:
    """The partition of every row into one cluster, as a strategy would
    return it (its centre the mean profile; no iteration)."""
    center = profiles.mean(axis=0, keepdims=True)
    cohesion = float(((profiles - center) ** 2).sum())
    return ClusteringResult(
        labels=np.zeros(profiles.shape[0], dtype=np.intp),
        centers=center,
        n_iter=0,
        objective=cohesion,
        cohesion=cohesion,
    )


def _nearest_cluster(
    sigma: np.ndarray, labels: np.ndarray, kappa: int, sparse: bool = False
) -> np.ndarray:
    """Per column of ``sigma`` (similarities of the points with clusters
    ``labels`` to some examples), the cluster with the largest mean
    similarity; clusters without points are never chosen. ``sparse`` sums
    with a sparse membership matrix, ``O(n · columns)`` instead of
    ``O(n · κ · columns)``."""
    n = labels.shape[0]
    if sparse:
        import scipy.sparse as sp

        member = sp.csr_matrix((np.ones(n), (labels, np.arange(n))), shape=(kappa, n))
    else:
        member = np.zeros((kappa, n))
        member[labels, np.arange(n)] = 1.0
    sizes = np.bincount(labels, minlength=kappa).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.asarray(member @ sigma) / sizes[:, None]
    mean[sizes == 0] = -np.inf
    return np.argmax(mean, axis=0)


def _by_blocks(X, width: int, route: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``route`` applied to the rows of ``X`` a block at a time, each block
    small enough that its ``width`` similarities per row take at most
    ``BLOCK_BYTES`` in float64; the blocks' answers, in row order."""
    block = max(1, BLOCK_BYTES // (8 * width))
    out = np.empty(X.shape[0], dtype=np.intp)
    for start in range(0, X.shape[0], block):
        Xb = X[start : start + block]
        out[start : start + Xb.shape[0]] = route(Xb)
    return out


def _nearest_center(profiles: np.ndarray, centers: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per row of ``profiles`` (similarities to the references), the
    cluster whose centre is nearest in squared Euclidean distance, the
    clustering's own assignment without its class-balance term; clusters
    without members are never chosen."""
    dist = (
        np.einsum("ij,ij->i", profiles, profiles)[:, None]
        - 2.0 * (profiles @ centers.T)
        + np.einsum("ij,ij->i", centers, centers)[None, :]
    )
    dist[:, sizes == 0] = np.inf
    return np.argmin(dist, axis=1)


@fill(
    X_rows=X_ROWS,
    X_y_classes=X_Y_CLASSES,
    **bandwidth_parts("exp(−‖x − r‖² / λ)"),
)
class ProfileSVC(RegionModelsMixin, BaseSVMClassifier):
    """Profile SVM: MagKmeans clusters of similarity profiles, one SVM each.

    Fit (Cheng, Tan & Jin [1]_, §4):

    1. Σ[i, l] = σ(x_i, r_l): the similarity of training example ``i`` to
       reference point ``l``. The references are the test examples given to
       ``fit`` (``transductive=True``, the paper's setting), else the training
       set itself or ``n_landmarks`` examples (landmarks) drawn from it.
    2. The rows of Σ are clustered into ``n_clusters`` (κ) groups with the
       named strategy: 'magkmeans' (k-means plus ``R``·class imbalance, so each
       cluster holds both classes; the Z-step is an LP), 'magkmeans-greedy'
       (the same objective, a local-search Z-step) or 'kmeans' (the paper's
       Figure-2 contrast: clusters tend to be pure). Above 5000 examples
       MagKmeans runs on a sample of 2000 and refines the result with
       passes over all examples (until one moves at most 1 % of them) (see
       :class:`~localsvm.clustering.MagKmeansClustering`; its
       ``max_exact_samples``, ``sample_size`` and ``refine_iter`` are
       ``clustering_params``), so clustering costs ``O(n · L · κ)`` for ``L``
       references.
    3. One SVM (linear by default, the paper's; any kernel of
       :class:`localsvm.SVC`) per cluster on its members, with box C. A
       cluster with a single class (or a single example) predicts that class.
       The per-cluster fits run through :func:`localsvm.run_tasks`, so an
       engine can spread them over machines.

    Predict (``routing``): in the inductive mode a test example ``x`` goes
    to the cluster whose centre is nearest to its own profile (its
    similarities to the references), the rule the clustering assigned the
    training examples by, less the class-balance term, so a test example
    near a training example goes, as a rule, to that example's cluster; its
    cluster's model labels it. In the transductive mode (and with
    ``routing='mean-similarity'``) ``x`` goes to the cluster with the largest
    mean similarity ``mean_{i ∈ cluster} σ(x, x_i)``, which is the centroid
    entry the paper uses when ``x`` is one of the references, and is defined
    for any new ``x`` too. With landmarks that mean runs over each cluster's
    *representatives* instead of all its members: the landmarks in the
    cluster (a uniform sample of its members), topped up with members drawn
    at random to at least 10 (all members of a smaller cluster); when the
    references are the whole training set (small ``n``) or in the
    transductive mode, the representatives are all the members, the exact
    rule. Either way routing costs ``O(L + 10·κ)`` similarities per example
    (``L`` references), not ``O(n)``, and prediction that plus the cluster
    model's support vectors. The per-cluster predictions run through
    :func:`localsvm.run_tasks` too.

    More than two classes: the clustering strategy balances every class per
    cluster (MagKmeans' per-class imbalance term, the paper's future work),
    and each cluster's SVM is a one-vs-one :class:`localsvm.SVC` over the
    classes it holds.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation of each cluster's SVM; must be positive.
    n_clusters : int or 'auto', default='auto'
        Number of clusters κ; at most the number of training examples.
        'auto' follows the kernel and the data's size: 10 clusters (at most
        ``n``) for the linear kernel, whose per-cluster models need the
        clusters for their nonlinearity (the paper's setting); for any other
        kernel ``ceil(n / 10000)``, one cluster per 10 000 training examples
        (one SVM, a plain :class:`localsvm.SVC`, up to 10 000), since a
        kernel SVM per cluster needs no clusters for its nonlinearity, and
        with the default ``C`` its accuracy fell as the clusters shrank on
        standardized data (``localsvm bench local`` compares the global RBF
        SVM with several κ). The number used is ``n_clusters_``; before
        this release the default was 10 for every kernel.
    R : float or None, default=None
        Weight of the class-imbalance term; None lets the strategy choose
        (MagKmeans: the profiles' diameter / κ, the paper's choice). Ignored
        by strategies without it ('kmeans').
    clustering : str, default='magkmeans'
        A registered clustering strategy (``localsvm.list_clusterings()``).
    clustering_params : dict or None, default=None
        Further keyword parameters for the strategy (``max_iter``,
        ``n_init``, ``min_cluster_size`` for MagKmeans).
    similarity : str, default='gaussian'
        The registered similarity strategy that builds the profiles
        (``localsvm.list_similarities()``), as in :class:`localsvm.LocalSVC`.
    {bandwidth}
    k : int, default=10
        Neighbours of the 'knn' similarity.
    similarity_params : dict or None, default=None
        Further keyword parameters for the similarity strategy.
    transductive : bool, default=False
        Profiles against the test set passed as ``fit(X, y, X_test=...)``
        (the paper) instead of against training examples.
    n_landmarks : int, 'auto' or None, default='auto'
        Inductive mode only: profile against this many training examples
        (landmarks) drawn with ``random_state``; at most the number of
        training examples (a larger value is a ``ValueError`` naming both).
        'auto' (or None): all of them while the ``n × n`` profiles need at
        most 256 MiB (``n ≤ 5792``), else ``min(256, 256 MiB / (8·n))`` of
        them (256 up to ``n = 131072``), so the profiles never grow
        quadratically and the clustering costs ``O(n · 256 · κ)``;
        ``references_`` holds the ones used.
    kernel : {'linear', 'poly', 'rbf', 'sigmoid'} or callable, default='linear'
        Kernel of the per-cluster SVMs (linear, as in the paper). Each
        cluster's SVM is a :class:`localsvm.SVC` with this kernel and ``C``,
        ``degree``, ``gamma``, ``coef0``, ``tol``, ``max_iter`` and
        ``backend``.
    degree : int, default=3
        Degree of the 'poly' kernel.
    gamma : {'scale', 'auto'} or float, default='scale'
        Coefficient of the 'poly', 'rbf' and 'sigmoid' kernels. 'scale'
        (``1 / (n_features · X.var())``) is resolved per cluster on its own
        members, so each cluster's kernel follows the spread of its region
        (a cluster is narrower than the whole set); 'auto' is
        ``1 / n_features``. The numbers used are ``gamma_``. Before this
        release 'scale' was resolved once on the whole training set.
    coef0 : float, default=0.0
        Constant term of the 'poly' and 'sigmoid' kernels.
    routing : {'auto', 'centroid', 'mean-similarity'}, default='auto'
        How a test example is given a cluster (see Predict above).
        'centroid': the nearest clustering centre to the example's profile
        against ``references_``; 'mean-similarity': the largest mean
        similarity to each cluster's representatives (the paper's centroid
        entry). 'auto' is 'mean-similarity' in the transductive mode (the
        paper's setting, where the test examples are the references) and
        'centroid' otherwise: in the inductive mode the mean-similarity rule
        sends many *training* examples to another cluster than their own,
        so a test example near them meets a model trained elsewhere
        (``python -m localsvm_benchmarks.local_defaults`` compares the
        defaults with :class:`localsvm.SVC`'s on standardized data). A
        strategy whose ``centers`` are not profiles
        (not of shape ``(n_clusters, n_references)``) gets
        'mean-similarity'. The rule used is ``routing_``.
    tol : float, default=1e-3
        SMO's stopping tolerance for each cluster's SVM.
    max_iter : int, default=-1
        Iteration cap per binary problem (-1: the solver's safety cap).
    backend : str, default='auto'
        A registered solver backend for the cluster SVMs.
    random_state : int, RandomState instance or None, default=None
        Controls the randomness of the clustering and the landmark draw.
    cache_size : float, default=200
        Megabytes of kernel cache of all the cluster SVMs trained at once,
        together: each gets ``cache_size / min(n_jobs, n_clusters)``.
    class_weight : dict, 'balanced' or None, default=None
        Multiplies ``C`` per class, as in :class:`localsvm.SVC`: an example
        of class ``c`` has the box ``C · class_weight[c]`` (times its
        ``sample_weight``) in its cluster's SVM. 'balanced' is
        ``n_samples / (n_classes · bincount(y))`` computed once on the whole
        training set, not per cluster (``class_weight_``). The clustering
        itself counts every example once.
    n_jobs : int or None, default=None
        Cluster SVMs trained at once.
    verbose : int, default=0
        Logging through :mod:`logging` (logger ``localsvm.profile_svc``): 0
        logs nothing; 1 one line per cluster SVM (iterations, support
        vectors, time); 2 also the fit's steps (similarity, clustering).
        Records are emitted at level INFO; without any logging
        configuration they go to stderr.

    {bandwidth_attributes}
    cluster_labels_ : ndarray of shape (n_samples,)
        The cluster of each training example (-1 for an example that a
        weight of 0 left out of the fit).
    n_clusters_ : int
        The number of clusters κ used (``n_clusters`` with 'auto' resolved).
    cluster_sizes_ : ndarray of shape (n_clusters,)
        Training examples in each cluster.
    cluster_classes_ : list of ndarray
        Class indices present in each cluster.
    cluster_models_ : list
        Each cluster's fitted :class:`localsvm.SVC`, or None for an empty or
        one-class cluster.
    clustering_ : ClusteringResult
        What the strategy returned (objective, iterations, ...).
    references_ : ndarray
        The reference points of the profiles.
    class_weight_ : ndarray of shape (n_classes,)
        The factor of ``C`` of each class (``class_weight`` resolved on the
        whole training set).
    gamma_ : ndarray of shape (n_clusters,)
        The kernel coefficient of each cluster's SVM (``gamma`` resolved on
        its members); NaN for a cluster without an SVM or with a callable
        kernel.
    routing_ : str
        The routing rule in use, 'centroid' or 'mean-similarity'
        (``routing`` with 'auto' resolved).
    representatives_ : ndarray of shape (n_representatives, n_features)
        The training examples a test example's similarities are measured
        against to choose its cluster.
    representative_clusters_ : ndarray of shape (n_representatives,)
        The cluster of each representative.
    reference_clusters_ : ndarray of shape (n_references,)
        The cluster each reference point is assigned to (the rule of
        :meth:`assign`, read off the profiles computed at fit, or, for the
        'centroid' rule in the transductive mode, measured again). In the
        transductive mode these are the test examples' clusters, which
        :meth:`fit_predict` uses without measuring the similarities again.
    timings_ : dict
        Seconds spent in 'similarity', 'clustering' and 'svm' during fit.
    cluster_n_iter_ : ndarray of shape (n_clusters,)
        SMO iterations of each cluster's SVM (summed over its binary
        problems); 0 for a cluster with no SVM (empty or one class).
    n_iter_ : int
        SMO iterations of all cluster SVMs together.

    See Also
    --------
    CellSVC : Kernel SVMs on overlapping cells of kernel k-means, the local
        method for data too large for one global kernel SVM.

    Notes
    -----
    Memory: fitting holds the ``n × L`` profiles (``L`` references) and the
    clustering's copies of them, about ``4·8·n·L`` bytes, checked before they
    are computed (``MemoryError`` naming ``n_landmarks``, or ``X_test`` in the
    transductive mode, when that exceeds half of the available memory), plus
    ``cache_size`` and the cluster SVMs' copies of their members
    (``O(n·d)``). Prediction measures similarities to the representatives
    for 64 MiB of test examples at a time.

    Progress: ``set_callbacks`` takes scikit-learn ≥ 1.9 callbacks (e.g.
    ``sklearn.callback.ProgressBar()``); the fit is one task with one
    subtask per cluster (its SVM).

    References
    ----------
    .. [1] H. Cheng, P.-N. Tan and R. Jin, "Localized Support Vector Machine
       and Its Efficient Algorithm", SIAM International Conference on Data
       Mining (SDM), 2007.

    Examples
    --------
    >>> from localsvm import ProfileSVC
    >>> from localsvm.datasets import load_banana
    >>> d = load_banana()
    >>> clf = ProfileSVC(n_clusters=4, bandwidth=0.5, n_landmarks=50,
    ...                  clustering="magkmeans-greedy", random_state=0)
    >>> clf = clf.fit(d.X_train, d.y_train)
    >>> int(clf.cluster_sizes_.sum()), round(clf.score(d.X_test, d.y_test), 2) > 0.7
    (400, True)
    """

    _region_attributes = ("cluster_models_", "cluster_classes_")
    _accepts_callable_kernel = True  # each cluster's SVM is an SVC, which takes one

    _parameter_constraints: ClassVar[dict] = {
        **BaseSVMClassifier._parameter_constraints,
        "kernel": [StrOptions(set(FEATURE_KERNELS)), callable],
        "n_clusters": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "R": [Interval(Real, 0.0, None, closed="left"), None],
        "clustering": [str],
        "clustering_params": [dict, None],
        **similarity_parameter_constraints(),
        "transductive": ["boolean"],
        "n_landmarks": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "routing": [StrOptions({"auto", "centroid", "mean-similarity"})],
        "random_state": ["random_state"],
        **CACHE_CLASS_WEIGHT_CONSTRAINTS,
    }

    def __init__(
        self,
        *,
        C=1.0,
        n_clusters="auto",
        R=None,
        clustering="magkmeans",
        clustering_params=None,
        similarity="gaussian",
        bandwidth="scale",
        k=10,
        similarity_params=None,
        transductive=False,
        n_landmarks="auto",
        kernel="linear",
        degree=3,
        gamma="scale",
        coef0=0.0,
        routing="auto",
        tol=1e-3,
        max_iter=-1,
        backend="auto",
        random_state=None,
        cache_size=200,
        class_weight=None,
        n_jobs=None,
        verbose=0,
    ):
        store_params(self, locals())

    @fit_method
    def fit(self, X, y, X_test=None, sample_weight=None):
        """Cluster the training profiles and train one SVM per cluster.

        Parameters
        ----------
        {X_y_classes}
        X_test : array-like of shape (n_test, n_features), default=None
            The test examples the profiles are measured against: required
            with ``transductive=True``, refused otherwise.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of ``C``, composed with ``class_weight``;
            None weighs every example 1. An example's weight follows it
            into its cluster's SVM; the clustering counts every example
            once. As in LIBSVM, an example of weight ``<= 0`` is left out
            before anything is computed (profiles, clustering and
            ``gamma='scale'`` included).

        Returns
        -------
        self : ProfileSVC
            The fitted estimator.
        """
        n_given = _num_samples(X)
        X, y, y_idx, weights, kept = self._weighted_fit_prologue(X, y, sample_weight)
        n = X.shape[0]
        kappa = check_n_clusters(self._count_clusters(n), n)
        self.n_clusters_ = kappa
        rng = check_random_state(self.random_state)
        landmarks = None  # indices of the references in X, when a sample
        if self.transductive:
            if X_test is None:
                raise ValueError("transductive=True needs the test examples: fit(X, y, X_test=...)")
            X_test = prepare_input(X_test, native=False, name="X_test", who="ProfileSVC")
            refs = validate_data(self, X_test, dtype=np.float64, order="C", reset=False)
            if refs.shape[0] == 0:
                raise ValueError("X_test must hold at least one example")
        else:
            if X_test is not None:
                raise ValueError(
                    "X_test is only used with transductive=True; the inductive mode "
                    "profiles against training examples"
                )
            if self.n_landmarks not in (None, "auto"):
                n_refs = int(self.n_landmarks)
                if n_refs > n:
                    raise ValueError(
                        f"n_landmarks={n_refs} is larger than the number of training "
                        f"examples (n={n}); pass at most {n}, or 'auto'"
                    )
            elif 8 * n * n <= PROFILE_AUTO_BYTES:
                n_refs = n
            else:
                n_refs = max(1, min(AUTO_MAX_LANDMARKS, PROFILE_AUTO_BYTES // (8 * n)))
            if n_refs < n:
                landmarks = np.sort(rng.choice(n, n_refs, replace=False))
                refs = X[landmarks]
            else:
                refs = X
        check_memory(
            PROFILE_COPIES * 8.0 * n * refs.shape[0],
            f"the {n} × {refs.shape[0]} similarity profiles (with the clustering's copies)",
            "pass fewer test examples (X_test) or use transductive=False with n_landmarks"
            if self.transductive
            else "use a smaller n_landmarks",
        )
        self.references_ = refs
        report = self._fit_report(kappa, X, y)
        self._sim_kwargs = similarity_kwargs(get_similarity(self.similarity), self, X)
        timings = {}
        start = time.perf_counter()
        profiles = compute_similarity(self.similarity, X, refs, **self._sim_kwargs)
        timings["similarity"] = time.perf_counter() - start
        report.log(
            2,
            "ProfileSVC fit: profiles of %d examples against %d references, %.3f s",
            n,
            refs.shape[0],
            timings["similarity"],
        )

        strategy = get_clustering(self.clustering)
        params = dict(self.clustering_params or {})
        if self.R is not None:
            params["R"] = float(self.R)
        start = time.perf_counter()
        seed = rng.randint(np.iinfo(np.int32).max)
        try:
            # One cluster is every example, whatever the strategy: nothing
            # to iterate (MagKmeans' diameter estimate and LPs cost more than
            # the SVM itself on a few thousand examples).
            result = (
                _one_cluster(profiles)
                if kappa == 1
                else strategy.cluster(profiles, y_idx, kappa, random_state=seed, **params)
            )
        except TypeError as err:
            raise ValueError(
                f"clustering strategy {self.clustering!r} rejected its parameters "
                f"{sorted(params)}: {err}"
            ) from err
        timings["clustering"] = time.perf_counter() - start
        report.log(
            2,
            "ProfileSVC fit: %d clusters (%s), %.3f s",
            kappa,
            self.clustering,
            timings["clustering"],
        )
        labels = np.asarray(result.labels, dtype=np.intp)
        if labels.shape != (n,) or labels.min(initial=0) < 0 or labels.max(initial=0) >= kappa:
            raise ValueError(
                f"clustering strategy {self.clustering!r} returned invalid labels "
                f"(expected {n} cluster indices in [0, {kappa}))"
            )
        self.clustering_ = result
        self.cluster_labels_ = labels_of_every_row(labels, kept, n_given)
        self.cluster_sizes_ = np.bincount(labels, minlength=kappa)
        self.cluster_classes_ = [np.unique(y_idx[labels == j]) for j in range(kappa)]
        if landmarks is None:
            self.representatives_ = X
            self.representative_clusters_ = labels
        else:
            reps = self._representatives(landmarks, labels, kappa, rng)
            self.representatives_ = X[reps]
            self.representative_clusters_ = labels[reps]
        self.routing_ = self._resolve_routing(result.centers, kappa, refs.shape[0])
        if self.routing_ == "mean-similarity":
            self.reference_clusters_ = _nearest_cluster(
                profiles, labels, kappa, sparse=landmarks is not None
            )
        elif self.transductive:
            self.reference_clusters_ = self._assign_valid(refs)
        else:
            own = profiles if landmarks is None else profiles[landmarks]
            self.reference_clusters_ = (
                np.zeros(own.shape[0], dtype=np.intp)
                if kappa == 1
                else _nearest_center(own, self.clustering_.centers, self.cluster_sizes_)
            )

        cache = float(self.cache_size) / max(1, min(kappa, effective_n_jobs(self.n_jobs)))
        svm_params = dict(
            C=self.C,
            cache_size=cache,
            kernel=self.kernel,
            degree=self.degree,
            coef0=self.coef0,
            tol=self.tol,
            max_iter=self.max_iter,
            backend=self.backend,
        )
        # One task per cluster that holds two classes: its members and its
        # kernel coefficient ('scale' on its own members); the training data
        # travels once per batch.
        members = [
            np.flatnonzero(labels == j) if self.cluster_classes_[j].size >= 2 else None
            for j in range(kappa)
        ]
        self.gamma_ = np.full(kappa, np.nan)
        tasks = []
        for j, rows in enumerate(members):
            gamma = self.gamma
            if rows is not None and not callable(self.kernel):
                gamma = self.gamma_[j] = (
                    resolve_gamma(self.gamma, X[rows]) if isinstance(self.gamma, str) else gamma
                )
            tasks.append(None if rows is None else (rows, gamma))
        start = time.perf_counter()
        report.subtasks("cluster", kappa)
        self.cluster_models_ = run_tasks(
            _fit_cluster,
            tasks,
            n_jobs=self.n_jobs,
            shared=(X, y_idx, None if np.all(weights == 1.0) else weights, svm_params),
            **report.hooks(_describe_cluster),
        )
        timings["svm"] = time.perf_counter() - start
        self._warn_unconverged(
            [m.fit_status_ == 0 for m in self.cluster_models_ if m is not None], "cluster SVMs"
        )
        self.timings_ = timings
        self.cluster_n_iter_ = region_iterations(self.cluster_models_)
        self.n_iter_ = int(self.cluster_n_iter_.sum())
        report.log(1, "ProfileSVC fit: %d cluster SVMs, %.3f s", kappa, timings["svm"])
        report.end(X, y)
        return self

    def _count_clusters(self, n: int) -> int:
        """``n_clusters`` with 'auto' resolved for ``n`` training examples
        (see the parameter)."""
        if self.n_clusters != "auto":
            return self.n_clusters
        if self.kernel == "linear":
            return min(AUTO_LINEAR_CLUSTERS, n)
        return max(1, math.ceil(n / AUTO_CLUSTER_SIZE))

    @staticmethod
    def _representatives(landmarks, labels, kappa, rng) -> np.ndarray:
        """Indices of each cluster's representatives: its landmarks, topped
        up with random members to ``MIN_REPRESENTATIVES`` (all members of a
        smaller cluster)."""
        chosen = [landmarks]
        in_landmarks = np.zeros(labels.shape[0], dtype=bool)
        in_landmarks[landmarks] = True
        have = np.bincount(labels[landmarks], minlength=kappa)
        sizes = np.bincount(labels, minlength=kappa)
        for j in np.flatnonzero(have < np.minimum(sizes, MIN_REPRESENTATIVES)):
            others = np.flatnonzero((labels == j) & ~in_landmarks)
            need = min(MIN_REPRESENTATIVES, sizes[j]) - have[j]
            chosen.append(rng.choice(others, need, replace=False))
        return np.sort(np.concatenate(chosen))

    def assign(self, X) -> np.ndarray:
        """Assign each row of ``X`` to a cluster.

        By ``routing_``: 'centroid' sends a row to the clustering centre
        nearest to its profile against ``references_``; 'mean-similarity' to
        the cluster whose representatives are, on average, most similar to
        it. Empty clusters are never chosen.

        Parameters
        ----------
        {X_rows}

        Returns
        -------
        ndarray of shape (n_samples,)
            The cluster index of each row.
        """
        return self._assign_valid(self._predict_prologue(X))

    def _resolve_routing(self, centers, kappa: int, n_refs: int) -> str:
        """``routing`` with 'auto' resolved (see the parameter); 'centroid'
        with centres that are not profiles is a ``ValueError``."""
        profiles_like = np.shape(centers) == (kappa, n_refs)
        if self.routing == "auto":
            return "centroid" if profiles_like and not self.transductive else "mean-similarity"
        if self.routing == "centroid" and not profiles_like:
            raise ValueError(
                f"routing='centroid' needs the clustering strategy's centers of shape "
                f"(n_clusters, n_references) = ({kappa}, {n_refs}); {self.clustering!r} "
                f"returned {np.shape(centers)}: pass routing='mean-similarity'"
            )
        return self.routing

    def _assign_valid(self, X: np.ndarray) -> np.ndarray:
        kappa = self.cluster_sizes_.shape[0]
        if kappa == 1:
            return np.zeros(X.shape[0], dtype=np.intp)
        # Models fitted before ``routing`` existed used the mean similarity.
        if getattr(self, "routing_", "mean-similarity") == "centroid":
            return self._assign_centroid(X)
        reps = self.representatives_

        def nearest(Xb):
            sigma = compute_similarity(self.similarity, reps, Xb, **self._sim_kwargs)
            return _nearest_cluster(sigma, self.representative_clusters_, kappa)

        return _by_blocks(X, reps.shape[0], nearest)

    def _assign_centroid(self, X: np.ndarray) -> np.ndarray:
        """The nearest clustering centre to each row's profile against the
        references, 64 MiB of profiles at a time."""
        refs = self.references_
        centers = np.asarray(self.clustering_.centers, dtype=np.float64)

        def nearest(Xb):
            profiles = compute_similarity(self.similarity, Xb, refs, **self._sim_kwargs)
            return _nearest_center(profiles, centers, self.cluster_sizes_)

        return _by_blocks(X, refs.shape[0], nearest)

    def _route(self, X: np.ndarray) -> np.ndarray:
        return self._assign_valid(X)

    def fit_predict(self, X, y, X_test=None, sample_weight=None):
        """Fit, then predict ``X_test`` (or ``X`` itself when it is None).

        With ``transductive=True`` the profiles are measured against
        ``X_test`` (the paper's protocol), so it must be given.

        Parameters
        ----------
        {X_y_classes}
        X_test : array-like of shape (n_test, n_features), default=None
            The examples to label; None labels the training examples.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-example multipliers of ``C``, as in :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_test,) or (n_samples,)
            The predicted labels of ``X_test`` (of ``X`` when it is None).
        """
        if X_test is None:
            return self.fit(X, y, sample_weight=sample_weight).predict(X)
        if self.transductive:
            self.fit(X, y, X_test=X_test, sample_weight=sample_weight)
            # The test examples are the references: their clusters are known.
            X_test = self._predict_prologue(X_test)
            return self.classes_[self._region_predict(X_test, self.reference_clusters_)]
        return self.fit(X, y, sample_weight=sample_weight).predict(X_test)
