"""scikit-learn's conformance checks on every localsvm estimator."""

import pytest
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.utils.estimator_checks import parametrize_with_checks

from localsvm import (
    SVC,
    SVCCV,
    SVR,
    SVRCV,
    CellSVC,
    ClusterSVC,
    FLSAClassifier,
    FLSAClassifierCV,
    IncrementalSVC,
    LocalSVC,
    NuSVC,
    NuSVR,
    OneClassSVM,
    ProfileSVC,
    RFLSAClassifier,
)

# Checks that cannot pass by design, with the reason. scikit-learn declares
# the same exception for its own SVC.
SAMPLE_WEIGHT_REASON = (
    "sample_weight equals repeating samples only with a fixed gamma and up to the "
    "solver tolerance: gamma='scale' (and the local estimators' bandwidths, cells, "
    "clusters and kernel columns) are computed from the rows of X, which repetition "
    "changes (test_svc.py::test_sample_weight_means_removal_and_repetition and "
    "test_weights.py check the equivalence where the maths gives it)"
)
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT_REASON,
    "check_sample_weight_equivalence_on_sparse_data": SAMPLE_WEIGHT_REASON,
}


#: The nu-SVC checks whose data (random labels, or the check's few points)
#: give the nu-dual a margin variable r within tol of 0: the two classes'
#: reduced convex hulls meet, so alpha / r has no determined size (LIBSVM,
#: and scikit-learn's NuSVC, return coefficients of about 1 / tol, with
#: arbitrary labels on the margin; localsvm raises ValueError, see
#: test_svm_family.py::test_nusvc_refuses_or_agrees_with_libsvm_on_a_grid_of_nu).
NU_ZERO_MARGIN_REASON = "r within tol of 0 on the check's data: alpha / r is not determined"
NU_ZERO_MARGIN_CHECKS = {
    "rbf": ("check_estimator_sparse_tag", "check_n_features_in"),
    "linear": (
        "check_classifier_data_not_an_array",
        "check_dtype_object",
        "check_estimator_sparse_array",
        "check_estimator_sparse_matrix",
        "check_estimator_sparse_tag",
        "check_estimators_nan_inf",
        "check_fit_check_is_fitted",
        "check_fit_idempotent",
        "check_fit_score_takes_y",
        "check_n_features_in",
        "check_n_features_in_after_fitting",
        "check_sample_weights_list",
        "check_sample_weights_not_an_array",
        "check_sample_weights_pandas_series",
        "check_supervised_y_2d",
    ),
}


# The estimators that cannot weigh their examples take sample_weight only to
# leave examples out (and the FLSA ones to weigh all alike).
UNWEIGHTED_REASON = (
    "the algorithm keeps one box C for every example (IncrementalSVC) or fits unweighted "
    "least squares (FLSA): sample_weight only leaves examples out, other weights are "
    "refused with a ValueError (test_weights.py checks both)"
)


def expected_failures(estimator):
    if isinstance(estimator, (FLSAClassifier, IncrementalSVC)):
        failures = {
            **EXPECTED_FAILED_CHECKS,
            "check_sample_weights_not_overwritten": UNWEIGHTED_REASON,
        }
        if isinstance(estimator, IncrementalSVC):
            # A common weight other than 1 would scale C.
            failures["check_sample_weights_list"] = UNWEIGHTED_REASON
        return failures
    if isinstance(estimator, ClusterSVC) and estimator.kernel == "linear":
        # No scale, no column draw: weights are exactly repetitions.
        return {}
    if isinstance(estimator, ClusterSVC) and estimator.normalize:
        return {
            **EXPECTED_FAILED_CHECKS,
            "check_class_weight_classifiers": (
                "a weight 10⁷ times larger on class 0 makes the other classes' slacks free "
                "in class 0's own problem, so its hyperplane shrinks towards w = 0 instead "
                "of taking more of the space (nearest-hyperplane rule; with normalize=False "
                "the check passes; test_weights.py checks the weighted fit)"
            ),
        }
    if isinstance(estimator, NuSVC):
        # As scikit-learn's NuSVC (and LIBSVM's): class_weight is ignored.
        return {
            **EXPECTED_FAILED_CHECKS,
            "check_class_weight_classifiers": "class_weight is ignored",
            **dict.fromkeys(NU_ZERO_MARGIN_CHECKS[estimator.kernel], NU_ZERO_MARGIN_REASON),
        }
    # Every estimator: gamma='scale' (and the similarity's bandwidth, the
    # partitions, the clusterings, the stream's order) see repeated rows.
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks(
    [
        SVC(),
        SVC(kernel="linear"),
        SVC(multiclass="ovr"),
        SVC(kernel="precomputed"),
        SVC(probability=True, random_state=0),
        SVC(kernel=rbf_kernel),
        NuSVC(),
        NuSVC(kernel="linear"),
        SVR(),
        SVR(kernel="linear"),
        SVR(kernel="precomputed"),
        NuSVR(),
        OneClassSVM(),
        OneClassSVM(kernel="linear"),
        LocalSVC(),
        LocalSVC(similarity="knn", k=5),
        LocalSVC(warm_start=False, kernel="rbf"),
        ProfileSVC(n_clusters=3, random_state=0),
        ProfileSVC(n_clusters=2, clustering="magkmeans-greedy", random_state=0),
        ProfileSVC(kernel="rbf", n_clusters=2, random_state=0),
        CellSVC(),
        CellSVC(n_cells=2, random_state=0),
        CellSVC(kernel="linear", n_cells=3, routing="hard", random_state=0),
        CellSVC(n_cells=2, tune=True, Cs=2, gammas=2, cv=2, random_state=0),
        FLSAClassifier(),
        FLSAClassifier(kernel="precomputed"),
        RFLSAClassifier(dictionary_size=0.5),
        FLSAClassifierCV(n_support=10, cv=3),
        IncrementalSVC(),
        IncrementalSVC(multiclass="ovr", max_support=50),
        IncrementalSVC(strategy="rebatch"),
        ClusterSVC(),
        ClusterSVC(kernel="linear"),
        ClusterSVC(kernel="precomputed"),
        ClusterSVC(n_columns=10, random_state=0, normalize=False),
        SVCCV(Cs=2, gammas=2, cv=3),
        SVCCV(Cs=2, gammas=2, cv=3, kernel_matrix="per_fold"),
        SVRCV(Cs=2, gammas=2, epsilons=2, cv=3),
    ],
    expected_failed_checks=expected_failures,
)
# The checks' toy data have fewer independent kernel columns than the FLSA
# estimators' n_support; the warning that says so is expected there.
@pytest.mark.filterwarnings("ignore::localsvm.FLSARankWarning")
# An explicit probability is deprecated, as in scikit-learn, and says so.
@pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning")
def test_sklearn_compatible(estimator, check):
    check(estimator)
