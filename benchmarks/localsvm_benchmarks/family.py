"""``python -m localsvm bench family``: localsvm's SVR, NuSVR, OneClassSVM and
NuSVC next to scikit-learn's (LIBSVM) on the same data in the same run.

Rows: ε-SVR and ν-SVR on ``make_friedman1`` (10 000 training rows, 2 000 test
rows, fixed seed, RBF with ``gamma='scale'``, ``C = 10``); the one-class SVM
on ijcnn1's negative class (all its 45 137 training rows, the largest
one-class set bundled, ``nu = 0.1``, and 2 000 of its test rows); ν-SVC on
ijcnn1 (its first training rows, ``nu = 0.1``: about a tenth of the labels
are positive, which bounds the feasible ν near 0.19) and on banana
(``nu = 0.3``). Each row shows the fit and predict time of each
implementation (the best of ``repeat`` runs each, after the same untimed
warm-up), how many
times longer scikit-learn took, and the agreement of the two models on the
test rows: the largest prediction difference over ``std(y)`` (regression)
or the fraction of equal labels (one-class, ν-SVC). When Intel's
scikit-learn-intelex (``sklearnex``) is importable, its estimator of the same
name is timed too (fit and predict, and how many times longer it took than
localsvm; a dash where it has none); without it the table says so and leaves
those columns out. Every model gets ``tol=1e-3`` and ``cache_size=200``.
The formulations are LIBSVM's (Chang & Lin, "LIBSVM: a library for support
vector machines", ACM TIST 2(3), 2011).
"""

from __future__ import annotations

import sys
from typing import TextIO

import numpy as np

from .report import columns, print_table, timed

COMMON = {"tol": 1e-3, "cache_size": 200}


def _cases(n_train: int, n_one_class: int | None):
    from sklearn.datasets import make_friedman1

    from localsvm.datasets import load_dataset

    X, y = make_friedman1(n_samples=n_train + 2000, noise=0.5, random_state=0)
    friedman = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    ijcnn1 = load_dataset("ijcnn1")
    neg = ijcnn1.X_train[ijcnn1.y_train == -1]
    neg = neg if n_one_class is None else neg[:n_one_class]
    neg_test = ijcnn1.X_test[ijcnn1.y_test == -1][: n_train // 5]
    banana = load_dataset("banana")
    return [
        ("SVR", "friedman1", {"C": 10.0, "epsilon": 0.1}, friedman, "regression"),
        ("NuSVR", "friedman1", {"C": 10.0, "nu": 0.3}, friedman, "regression"),
        (
            "OneClassSVM",
            "ijcnn1 y=-1",
            {"nu": 0.1},
            (neg, None, neg_test, None),
            "labels",
        ),
        (
            "NuSVC",
            "ijcnn1",
            {"nu": 0.1},
            (
                ijcnn1.X_train[:n_train],
                ijcnn1.y_train[:n_train],
                ijcnn1.X_test[: n_train // 5],
                ijcnn1.y_test[: n_train // 5],
            ),
            "labels",
        ),
        (
            "NuSVC",
            "banana",
            {"nu": 0.3},
            (banana.X_train, banana.y_train, banana.X_test, banana.y_test),
            "labels",
        ),
    ]


def _sklearnex_svm():
    """``sklearnex.svm``, or None when scikit-learn-intelex is not importable."""
    try:
        import sklearnex.svm as skx
    except Exception:  # not installed, or its native library failed to load
        return None
    return skx


def run_family(
    n_train: int = 10_000,
    out: TextIO | None = None,
    *,
    n_one_class: int | None = None,
    repeat: int = 1,
) -> list[dict]:
    """Print and return the table described in the module notes.

    Parameters
    ----------
    n_train : int, default=10000
        Training rows of the regression and ν-SVC sets (test rows: 2 000,
        or ``n_train // 5``).
    out : text stream or None, default=None
        Where to print (standard output by default).
    n_one_class : int or None, default=None
        Training rows of the one-class set: the first of ijcnn1's negative
        class (None: all of them).
    repeat : int, default=1
        Runs per timing, the best kept.

    Returns
    -------
    list of dict
        One row per estimator (``fit_sklearnex`` and ``predict_sklearnex``
        None where sklearnex was not timed).
    """
    import sklearn.svm as sk

    import localsvm

    out = sys.stdout if out is None else out
    skx = _sklearnex_svm()
    rows = []
    print(
        f"localsvm bench family: tol={COMMON['tol']}, cache_size={COMMON['cache_size']} MB, "
        f"best of {repeat} run(s) per timing",
        file=out,
    )
    if skx is None:
        print(
            "sklearnex: not importable (pip install scikit-learn-intelex); its columns are "
            "left out",
            file=out,
        )
    intel = " | sklearnex >9.3f | x >6.1f" if skx is not None else ""
    layout = (
        f"estimator <12 | data <12 | n >6d | fit s >8.3f | sklearn >8.3f | x >6.1f{intel} | "
        f"predict s >9.3f | sklearn >8.3f | x >6.1f{intel} | agreement"
    )
    table = columns(layout)
    print_table(table, [], out, rule=False)
    for name, data, params, (X, y, Xt, _yt), kind in _cases(n_train, n_one_class):
        ours_cls, theirs_cls = getattr(localsvm, name), getattr(sk, name)
        # Untimed warm-up on a few hundred rows spread over the set (so a
        # rare class is there in its proportion, as ν-SVC needs).
        few = slice(None, None, max(1, X.shape[0] // 300))
        ours_cls(**params, **COMMON).fit(X[few], None if y is None else y[few])
        ours, fit_o = timed(lambda: ours_cls(**params, **COMMON).fit(X, y), repeat)  # noqa: B023
        theirs, fit_t = timed(lambda: theirs_cls(**params, **COMMON).fit(X, y), repeat)  # noqa: B023
        pred_o, t_o = timed(lambda: ours.predict(Xt), repeat)  # noqa: B023
        pred_t, t_t = timed(lambda: theirs.predict(Xt), repeat)  # noqa: B023
        fit_x = pred_x = None
        if skx is not None and hasattr(skx, name):
            intel_cls = getattr(skx, name)
            intel, fit_x = timed(lambda: intel_cls(**params, **COMMON).fit(X, y), repeat)  # noqa: B023
            _, pred_x = timed(lambda: intel.predict(Xt), repeat)  # noqa: B023
        if kind == "regression":
            agree = float(np.abs(pred_o - pred_t).max() / np.std(y))
            text = f"max|Δ|/std(y) = {agree:.2e}"
        else:
            agree = float(np.mean(pred_o == pred_t))
            text = f"equal labels {100 * agree:.2f} %"
        row = {
            "estimator": name,
            "data": data,
            "n": int(X.shape[0]),
            "fit": fit_o,
            "fit_sklearn": fit_t,
            "predict": t_o,
            "predict_sklearn": t_t,
            "fit_sklearnex": fit_x,
            "predict_sklearnex": pred_x,
            "agreement": agree,
        }
        rows.append(row)

        def intel(seconds, ours_s):
            if skx is None:
                return ()
            if seconds is None:
                return ("-", "-")
            return (seconds, seconds / ours_s)

        fits = (fit_o, fit_t, fit_t / fit_o, *intel(fit_x, fit_o))
        predicts = (t_o, t_t, t_t / t_o, *intel(pred_x, t_o))
        line = (name, data, X.shape[0], *fits, *predicts, text)
        print_table(table, [line], out, head=False)
    return rows
