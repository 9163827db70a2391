"""``ProfileSVC(kernel='rbf')`` with its defaults next to ``SVC()`` with its
defaults, held-out accuracy on standardized data.

``python -m localsvm_benchmarks.local_defaults [--sets a9a ijcnn1 usps
generated:200000] [--n-test 10000]``

Each set is standardized on its training rows (scikit-learn's
``StandardScaler``): a9a (32 561 training rows, 123 binary features),
ijcnn1 (49 990), usps (7 291, 10 classes: one cluster by default, so the two
models are the same) and ``generated:N``, the generated problem of
``localsvm bench scale`` (:func:`localsvm_benchmarks.data.generated`) with
``N`` training rows. The test rows are the first ``--n-test`` of each set's
test split. Both models run with every default but ``random_state=0`` for
ProfileSVC; the table gives the number of clusters, the routing rule, the
CPU seconds of fit and predict together (``time.process_time``: every
thread of the process) and the accuracy difference in points. ProfileSVC
is Cheng, Tan and Jin, "Localized Support Vector Machine and Its Efficient
Algorithm", SIAM International Conference on Data Mining (SDM), 2007.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from .data import generated
from .report import columns, print_table

#: The sets of the default run.
DEFAULT_SETS = ("a9a", "ijcnn1", "usps", "generated:200000")


def load(name: str, n_test: int) -> tuple[np.ndarray, ...]:
    """The standardized training rows and the first ``n_test`` test rows of
    ``name`` (a bundled set, or ``generated:N``)."""
    from sklearn.preprocessing import StandardScaler

    from localsvm.datasets import load_dataset

    if name.startswith("generated:"):
        return generated(int(name.split(":", 1)[1]), n_test)
    d = load_dataset(name)
    scaler = StandardScaler().fit(d.X_train)
    return (
        scaler.transform(d.X_train),
        d.y_train,
        scaler.transform(d.X_test[:n_test]),
        d.y_test[:n_test],
    )


def _cpu(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def run_local_defaults(
    sets: Sequence[str] = DEFAULT_SETS, n_test: int = 10_000, out: TextIO | None = None
) -> list[dict]:
    """Print and return the table of the module notes (one row per set)."""
    from localsvm import SVC, ProfileSVC

    out = sys.stdout if out is None else out
    print(
        "ProfileSVC defaults: SVC() against ProfileSVC(kernel='rbf', "
        f"random_state=0), standardized data, {n_test} test rows at most",
        file=out,
        flush=True,
    )
    table = columns(
        "data <18 | n >7d | SVC % >7.2f | SVC cpu s >9.1f | κ >3d | routing <15 | "
        "Profile % >9.2f | Profile cpu s >13.1f | Δ pt >+6.2f"
    )
    print_table(table, [], out, rule=False)
    rows = []
    for name in sets:
        X, y, Xt, yt = load(name, n_test)
        svc, svc_s = _cpu(lambda: SVC().fit(X, y).score(Xt, yt))  # noqa: B023
        model = ProfileSVC(kernel="rbf", random_state=0)
        prof, prof_s = _cpu(lambda: model.fit(X, y).score(Xt, yt))  # noqa: B023
        row = {
            "data": name,
            "n": int(X.shape[0]),
            "svc": float(svc),
            "svc_cpu": svc_s,
            "n_clusters": int(model.n_clusters_),
            "routing": model.routing_,
            "profile": float(prof),
            "profile_cpu": prof_s,
        }
        rows.append(row)
        line = (
            name,
            row["n"],
            100 * svc,
            svc_s,
            row["n_clusters"],
            row["routing"],
            100 * prof,
            prof_s,
            100 * (prof - svc),
        )
        print_table(table, [line], out, head=False)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localsvm_benchmarks.local_defaults",
        description="ProfileSVC(kernel='rbf') defaults against SVC() defaults",
    )
    parser.add_argument(
        "--sets",
        nargs="+",
        default=list(DEFAULT_SETS),
        help="bundled sets and/or generated:N (default: %(default)s)",
    )
    parser.add_argument("--n-test", type=int, default=10_000, help="test rows per set at most")
    args = parser.parse_args(argv)
    run_local_defaults(args.sets, args.n_test)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
