"""The fixed cost of small fits: localsvm against scikit-learn (LIBSVM) in
process CPU time, and how much of localsvm's time its solver takes.

``python -m localsvm_benchmarks.fixed_cost [--repeat 20]``

Rows: ``NuSVC`` on ijcnn1's first 2 000 training rows (``nu = 0.1``),
``NuSVR`` on 5 000 rows of ``make_friedman1`` (``C = 10``, ``nu = 0.3``,
fixed seed) and a 26-class ``SVC`` on 1 300 rows of
:func:`localsvm_benchmarks.data.many_classes` (325 one-vs-one problems of
about 100 rows). Every model has its defaults otherwise; localsvm runs with
``n_jobs=1``, so its CPU time is comparable with LIBSVM's single thread.
Each fit is timed with ``time.process_time`` (every thread of the process,
steadier than the wall clock on a shared machine), averaged over
``--repeat`` fits after one untimed fit. The ``solver`` column is the CPU
time spent inside the Rust core's ``solve_qp`` and ``solve_qp_many`` calls
(the dual solves; the one-vs-one problems go to ``solve_qp_many`` in one
call), and
``rest`` what the fit spends around them (validation, the binary problems'
set-up, the result's assembly); the last column is the ratio scikit-learn
would trail by if ``rest`` were nothing. LIBSVM is Chang and Lin, "LIBSVM: a
library for support vector machines", ACM TIST 2(3), 2011.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TextIO

from .data import many_classes
from .report import columns, print_table


def cases(n_many: int = 1300) -> list[tuple[str, str, dict, tuple]]:
    """``(label, estimator name, parameters, (X, y))`` of each row."""
    from sklearn.datasets import make_friedman1

    from localsvm.datasets import load_dataset

    d = load_dataset("ijcnn1")
    friedman = make_friedman1(5000, noise=0.5, random_state=0)
    return [
        ("NuSVC 2 000", "NuSVC", {"nu": 0.1}, (d.X_train[:2000], d.y_train[:2000])),
        ("NuSVR 5 000", "NuSVR", {"C": 10.0, "nu": 0.3}, friedman),
        (f"SVC 26 classes {n_many}", "SVC", {}, many_classes(n_many)),
    ]


@contextlib.contextmanager
def solver_clock() -> Iterator[list[float]]:
    """While active, the CPU seconds of every ``_core.solve_qp`` and
    ``_core.solve_qp_many`` call the Rust backend makes accumulate in the
    yielded one-element list."""
    from localsvm import _core
    from localsvm.backends import rust

    spent = [0.0]

    def timed(real):
        def call(*args, **kwargs):
            start = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - start

        return call

    solves = {name: timed(getattr(_core, name)) for name in ("solve_qp", "solve_qp_many")}

    class Core:
        def __getattr__(self, name):
            return solves.get(name) or getattr(_core, name)

    saved = rust._core
    rust._core = Core()
    try:
        yield spent
    finally:
        rust._core = saved


def _cpu(fn, repeat: int, *, warm: bool = True) -> float:
    if warm:
        fn()
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def run_fixed_cost(
    repeat: int = 20, out: TextIO | None = None, *, n_many: int = 1300
) -> list[dict]:
    """Print and return the table of the module notes (one dict per row)."""
    import sklearn.svm as sk

    import localsvm

    out = sys.stdout if out is None else out
    print(
        f"fixed cost of small fits: CPU ms per fit (process_time), mean of {repeat} fits; "
        "localsvm with n_jobs=1",
        file=out,
        flush=True,
    )
    table = columns(
        "fit <22 | localsvm ms >11.2f | solver ms >9.2f | rest ms >8.2f | sklearn ms >10.2f | "
        "sklearn / localsvm >18.2f× | without rest >12.2f×"
    )
    print_table(table, [], out, rule=False)
    rows = []
    for label, name, params, (X, y) in cases(n_many):
        ours_cls, theirs_cls = getattr(localsvm, name), getattr(sk, name)
        fit = lambda: ours_cls(n_jobs=1, **params).fit(X, y)  # noqa: B023, E731
        fit()
        with solver_clock() as spent:
            # The solves' time is measured inside the fits' window.
            ours = _cpu(fit, repeat, warm=False)
            solver = spent[0] / repeat
        theirs = _cpu(lambda: theirs_cls(**params).fit(X, y), repeat)  # noqa: B023
        row = {"fit": label, "localsvm": ours, "solver": solver, "sklearn": theirs}
        rows.append(row)
        line = (
            label,
            1e3 * ours,
            1e3 * solver,
            1e3 * (ours - solver),
            1e3 * theirs,
            theirs / ours,
            theirs / solver if solver > 0 else float("nan"),
        )
        print_table(table, [line], out, head=False)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localsvm_benchmarks.fixed_cost",
        description="CPU time of small fits, localsvm against scikit-learn",
    )
    parser.add_argument("--repeat", type=int, default=20, help="timed fits per row")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    run_fixed_cost(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
