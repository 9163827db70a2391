"""Fingerprints of every estimator's fitted model, to compare two builds of the core.

Each estimator is fitted on fixed small bundled data and its fitted arrays
(``dual_coef_``, ``support_``, ``intercept_`` and friends, where it has them)
and its decision values on held-out rows are hashed byte for byte. Two builds
of the compiled core that print the same lines fit the same models, bit for bit.

Run ``python -m localsvm_benchmarks.modelhash`` (``--json PATH`` also writes the
table), once per build, and compare the outputs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings

import numpy as np
import scipy.sparse as sp

_ATTRS = (
    "dual_coef_",
    "support_",
    "support_vectors_",
    "intercept_",
    "coef_",
    "n_support_",
    "classes_",
)


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _dense(a):
    return a.toarray() if sp.issparse(a) else np.asarray(a)


def _fingerprint(model, X_test) -> dict[str, str]:
    out = {}
    for name in _ATTRS:
        value = getattr(model, name, None)
        if value is not None and not callable(value):
            try:
                out[name] = _digest([_dense(value)])
            except (TypeError, ValueError):
                pass
    for method in ("decision_function", "predict"):
        if hasattr(model, method):
            out[method] = _digest([np.asarray(getattr(model, method)(X_test))])
    return out


def _cases():
    import localsvm as ls
    from localsvm.datasets import load_a9a, load_banana, load_ijcnn1, load_iris

    b = load_banana()
    Xb, yb, Xbt = b.X_train, b.y_train, b.X_test[:500]
    iris = load_iris()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(iris.y))
    Xi, yi = iris.X[order][:100], iris.y[order][:100]
    Xit = iris.X[order][100:]
    a9 = load_a9a()
    Xa = sp.csr_matrix(a9.X_train[:600])
    ya = a9.y_train[:600]
    Xat = sp.csr_matrix(a9.X_test[:300])
    yr = np.sin(3 * Xb[:, 0]) + 0.1 * Xb[:, 1]

    def fit(est, X, y=None):
        return est.fit(X) if y is None else est.fit(X, y)

    yield "SVC rbf binary", lambda: fit(ls.SVC(), Xb, yb), Xbt
    yield "SVC linear binary", lambda: fit(ls.SVC(kernel="linear", C=0.5), Xb, yb), Xbt
    yield "SVC poly binary", lambda: fit(ls.SVC(kernel="poly", degree=3, coef0=1.0), Xb, yb), Xbt
    yield "SVC sigmoid binary", lambda: fit(ls.SVC(kernel="sigmoid", gamma=0.1), Xb, yb), Xbt
    yield "SVC rbf multiclass", lambda: fit(ls.SVC(C=10.0), Xi, yi), Xit
    ij = load_ijcnn1()
    Xj, yj, Xjt = ij.X_train[:3000], ij.y_train[:3000], ij.X_test[:1000]
    yield "SVC batched", lambda: fit(ls.SVC(C=4.0, solver="batched"), Xj, yj), Xjt
    yield (
        "SVC batched float32 noshrink",
        lambda: fit(ls.SVC(C=4.0, solver="batched", shrinking=False), Xj.astype(np.float32), yj),
        Xjt,
    )
    yield "SVC smo ijcnn1", lambda: fit(ls.SVC(C=4.0, solver="smo"), Xj, yj), Xjt
    yield "SVC rbf sparse", lambda: fit(ls.SVC(), Xa, ya), Xat
    yield "SVC linear sparse", lambda: fit(ls.SVC(kernel="linear"), Xa, ya), Xat
    yield "NuSVC", lambda: fit(ls.NuSVC(nu=0.3), Xb, yb), Xbt
    yield "NuSVC multiclass", lambda: fit(ls.NuSVC(nu=0.2), Xi, yi), Xit
    yield "SVR", lambda: fit(ls.SVR(C=3.0, epsilon=0.05), Xb, yr), Xbt
    yield "NuSVR", lambda: fit(ls.NuSVR(nu=0.4), Xb, yr), Xbt
    yield "OneClassSVM", lambda: fit(ls.OneClassSVM(nu=0.1), Xb), Xbt
    yield "LocalSVC", lambda: fit(ls.LocalSVC(k=15), Xb, yb), Xbt[:200]
    yield "LocalSVC rbf", lambda: fit(ls.LocalSVC(k=15, kernel="rbf"), Xb, yb), Xbt[:200]
    yield "ProfileSVC", lambda: fit(ls.ProfileSVC(n_clusters=8, random_state=0), Xb, yb), Xbt
    yield "CellSVC", lambda: fit(ls.CellSVC(cell_size=100, random_state=0), Xb, yb), Xbt
    yield "FLSAClassifier", lambda: fit(ls.FLSAClassifier(random_state=0), Xb, yb), Xbt
    yield "RFLSAClassifier", lambda: fit(ls.RFLSAClassifier(random_state=0), Xb, yb), Xbt
    yield (
        "FLSAClassifierCV",
        lambda: fit(ls.FLSAClassifierCV(random_state=0), Xb, yb),
        Xbt,
    )
    yield "FLSAClassifier multiclass", lambda: fit(ls.FLSAClassifier(random_state=0), Xi, yi), Xit

    def incremental():
        est = ls.IncrementalSVC()
        classes = np.unique(yb)
        for start in range(0, len(yb), 100):
            est.partial_fit(Xb[start : start + 100], yb[start : start + 100], classes=classes)
        return est

    yield "IncrementalSVC partial_fit", incremental, Xbt
    yield "IncrementalSVC multiclass", lambda: fit(ls.IncrementalSVC(), Xi, yi), Xit
    yield "ClusterSVC", lambda: fit(ls.ClusterSVC(n_columns=100, random_state=0), Xb, yb), Xbt


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the table to this file")
    args = parser.parse_args(argv)
    table = {}
    for name, make, X_test in _cases():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                model = make()
                table[name] = _fingerprint(model, X_test)
            except Exception as exc:  # a build that fails differs too
                table[name] = {"error": f"{type(exc).__name__}: {exc}"}
        line = " ".join(f"{k}={v}" for k, v in table[name].items())
        print(f"{name:28s} {line}")
    print("all", _digest([np.frombuffer(json.dumps(table, sort_keys=True).encode(), np.uint8)]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(table, fh, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
