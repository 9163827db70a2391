"""scikit-learn's conformance checks on every localsvm estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from localsvm import SVC, FLSAClassifier, FLSAClassifierCV, RFLSAClassifier

# Checks that cannot pass by design, with the reason. scikit-learn declares
# the same exception for its own SVC.
SAMPLE_WEIGHT_REASON = (
    "sample_weight equals repeating samples only with a fixed gamma and up to the "
    "solver tolerance: gamma='scale' is computed from the rows of X, which "
    "repetition changes (test_svc.py::test_sample_weight_means_removal_and_repetition "
    "checks the equivalence with a fixed gamma and tol=1e-9)"
)
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": SAMPLE_WEIGHT_REASON,
}


@parametrize_with_checks(
    [
        SVC(),
        SVC(kernel="linear"),
        SVC(multiclass="ovr"),
        SVC(kernel="precomputed"),
        FLSAClassifier(),
        FLSAClassifier(kernel="precomputed"),
        RFLSAClassifier(dictionary_size=0.5),
        FLSAClassifierCV(n_support=10, cv=3),
    ],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
