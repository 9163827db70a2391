"""``python -m localsvm reproduce lsvm``: the experiments of H. Cheng, P.-N.
Tan and R. Jin, "Localized Support Vector Machine and Its Efficient
Algorithm", SIAM International Conference on Data Mining (SDM), 2007, next to
the paper's figures.

1. **Table 1** (:mod:`.table1`). Accuracy of SVM (:class:`localsvm.SVC`,
   RBF), KNN (scikit-learn's ``KNeighborsClassifier``), HLSVM
   (:class:`localsvm.LocalSVC`, ``similarity='knn'``), SLSVM (``LocalSVC``,
   Gaussian similarity) and PSVM (:class:`localsvm.ProfileSVC`, MagKmeans,
   transductive as in the paper) on Breast (``breast_w``), Glass, Iris and
   Yeast. Protocol (the paper's §5.2, :mod:`.protocol`): 1/5 of each set for
   training and 4/5 for test (stratified; repetition ``r`` draws its split
   with ``random_state=r``), ``--repetitions`` (10) repetitions, every
   parameter chosen by ``--folds``-fold (10) stratified cross-validation on
   the training part (folds shuffled with ``random_state=r``; the fold count
   is lowered to the smaller class's size in the training part when that is
   smaller, and the output says so).
   *Scaling:* each attribute is divided by its largest absolute value over
   the training part (a column that is 0 there is left as it is), and the
   test part is divided by the same numbers ("normalized based on the maximum
   value of the attribute", §5.2).
   *Widths:* the RBF width and the similarity bandwidth λ (σ = exp(−‖x − x'‖²/λ),
   RBF ``gamma = 1/λ``) are tuned as multiples ``f·m`` of ``m``, the median
   squared distance between training examples (after scaling), so one grid
   suits every data set; the tables print ``f``.
   *PSVM* is fitted transductively (profiles against the examples to be
   classified: the validation fold during CV, the test part afterwards).
   Multiclass sets are split into two groups of classes (the paper does the
   same but does not say which groups; :mod:`.data`):

   * Glass (labels 1, 2, 3, 5, 7): window glass {1, 2, 3} vs non-window {5, 7}.
   * Iris (labels 0, 1, 2): versicolor {1} vs setosa + virginica {0, 2} — a
     split no single line separates.
   * Yeast (PMLB labels 0–8): membrane proteins {ME1, ME2, ME3} vs the rest.
     PMLB's codes are not alphabetical; the class names are recovered from
     UCI's class counts (ME1 44, ME2 51, ME3 163, ...; all counts differ), which
     gives ME1 = 3, ME2 = 5, ME3 = 6 (the codes follow the order of first
     appearance in UCI's file: MIT, NUC, CYT, ME1, EXC, ME2, ME3, VAC, POX).
   * Breast is binary: malignant (1) vs benign (0).

   KDDCup, Physics, Robot and Covtype (the paper's other four rows) are not
   bundled, so they are not reproduced.

   Table 1 is printed as one table: per data set and method the paper's
   figure, ours (mean ± std over the repetitions), the difference and the
   parameters CV chose most often, then a one-line protocol note per data
   set (what the paper did, what we did, why they differ); the paper's four
   sets that are not bundled close the table with the paper's figures and
   why they are absent.

2. **Figure 2** (:mod:`.figures`): k-means against MagKmeans (κ = 2) on four
   generated blobs, two per class (the paper's points are not published):
   each cluster's class counts in one line, the image in
   ``<out>/lsvm_magkmeans.png``.

3. **Figure 3** (:mod:`.figures`): PSVM's piecewise-linear boundaries on the
   paper's two kinds of synthetic set, with κ = 11 (the paper's count for
   both), fitted inductively: a horse-shoe set (Banana, realization 0, 400
   training points, unscaled: its two attributes are already centred and of
   unit scale; λ = 0.5, C = 10) and two spirals of 1.5 turns generated in
   the unit square (200 points per class, ``numpy.random.default_rng(0)``,
   test points from seed 1; λ = 0.03, C = 100). One line gives both test
   accuracies; ``<out>/lsvm_psvm_boundary.png`` shows each plane coloured by
   predicted class, the boundary, and the training points with the paper's
   markers (○, ∗) coloured by MagKmeans cluster.

4. **Figure 4 (runtime)**, with ``--runtime`` (:mod:`.runtime`). The paper's
   Physics data is not available; ijcnn1 stands in: 300 training examples
   of each class drawn from ijcnn1's training set and test sets of 600,
   1200, 2400, 4800 examples (half of each class, nested) from its test set
   (``numpy.random.default_rng(0)``), scaled as above. Fixed parameters
   (picked by a quick check on a different draw): C = 10 for every SVM,
   λ = 1 (RBF ``gamma = 1``), k = 50 (KNN and HLSVM), κ = 10 (PSVM).
   Time = fit + predict (PSVM: fit with the test set as the profiles'
   references, then predict it); PSVM's MagKmeans time is reported
   separately from ``ProfileSVC.timings_``. The plot goes to
   ``<out>/lsvm_runtime.png``. Then, on the same data (600 training, 4800
   test examples), SLSVM's prediction time per test example, and PSVM
   against an RBF SVC each tuned by the same CV (same folds, grids of 12
   points), then fit + predict on the 4800 test examples (best of
   ``--speed-repeat`` runs) for PSVM, localsvm's SVC and scikit-learn's
   SVC: PSVM's time as a multiple of each SVC's and both accuracies (this
   comparison is ours, not the paper's).

``localsvm`` estimators use ``--n-jobs`` threads (default: every CPU);
scikit-learn's SVC and KNN are single-threaded. The CV runs its
(parameter, fold) fits on ``--n-jobs`` threads with single-threaded
estimators inside.

The command line is :mod:`.cli` (:func:`add_arguments`, :func:`run`).
"""

from __future__ import annotations

from .cli import add_arguments, run
from .data import DATASETS, BinaryData, load_binary, yeast_class_names
from .protocol import METHODS, Config, cross_validate, fit_predict
from .table1 import PAPER, PAPER_SOURCE

__all__ = [
    "DATASETS",
    "METHODS",
    "PAPER",
    "PAPER_SOURCE",
    "BinaryData",
    "Config",
    "add_arguments",
    "cross_validate",
    "fit_predict",
    "load_binary",
    "run",
    "yeast_class_names",
]
