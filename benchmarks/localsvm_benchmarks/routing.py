"""``CellSVC``'s routing rules on one fitted model: hard routing, the
logistic blend of the two nearest cells alone, and the blend within the
second cell's overlap reach (``routing='soft'``), held-out accuracy.

``python -m localsvm_benchmarks.routing [--sets a9a ijcnn1 usps
generated:200000] [--n-test N] [--cell-size auto|N] [--overlap F] [--tune]``

The sets are :func:`localsvm_benchmarks.local_defaults.load`'s (standardized
on their training rows; ``generated:N`` is the generated problem of
``localsvm bench scale``); the test rows are the first ``--n-test`` of each
set's test split (all of them by default; 20 000 generated ones, as
``bench scale``). One ``CellSVC(random_state=0)`` (every other parameter at
its default, or ``cell_size``, ``overlap`` / ``tune=True`` when given) is fitted per set;
the three rules then label the same test rows: 'hard' (each row by its own
cell's SVM), 'logistic' (its two nearest cells weighted
``1 / (1 + exp(−(s₂ − s₁) / routing_scale_))``, the weight without the
reach) and 'soft' (:func:`localsvm.cells.soft_weights`: that blend fading
to the own cell alone at the second cell's ``cell_overlap_reach_``). The
table gives the accuracies, the share of test rows each soft rule blends
(weight of the own cell below ``1 − 10⁻⁴``) and the fit's wall seconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import numpy as np

from .data import N_TEST
from .local_defaults import load
from .report import columns, print_table

#: The sets of the default run.
DEFAULT_SETS = ("a9a", "ijcnn1", "usps", "generated:200000")


def _blend(model, X: np.ndarray, first, second, w) -> np.ndarray:
    """Class indices from the own cells' decision values blended, with
    weights ``w``, with the second cells' (CellSVC's own blend)."""
    from localsvm._multiclass import scores_index

    return scores_index(model._blended_decision(X, first, second, w))


def run_one(name: str, n_test: int | None, cell_size, tune: bool, overlap: float = 1.0) -> dict:
    """Fit one CellSVC on ``name`` and label its test rows by each rule."""
    from localsvm import CellSVC
    from localsvm.cells import SOFT_NEGLIGIBLE, soft_weights

    if n_test is None and name.startswith("generated:"):
        n_test = N_TEST
    X, y, Xt, yt = load(name, n_test)
    start = time.perf_counter()
    model = CellSVC(cell_size=cell_size, overlap=overlap, tune=tune, random_state=0)
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    Xt = model._predict_prologue(Xt)
    truth = np.searchsorted(model.classes_, yt)
    hard = model._region_predict(Xt, model._route(Xt))
    row = {
        "set": name,
        "n": X.shape[0],
        "test": Xt.shape[0],
        "cells": model.n_cells_,
        "fit_s": fit_s,
        "hard": float(np.mean(hard == truth)),
    }
    if model.partition_ is None:
        row.update(logistic=row["hard"], soft=row["hard"], blend_log=0.0, blend_soft=0.0)
        return row
    first, second, w = model._soft_weights(Xt)
    S = model.partition_.scores(Xt)
    s = np.take_along_axis(S, np.stack([first, second], axis=1), axis=1).astype(np.float64)
    margin = s[:, 1] - s[:, 0]
    w_log = soft_weights(margin, np.full(margin.shape, np.inf), model.routing_scale_)
    for key, weights in (("logistic", w_log), ("soft", w)):
        row[key] = float(np.mean(_blend(model, Xt, first, second, weights) == truth))
    row["blend_log"] = float(np.mean(w_log < 1.0 - SOFT_NEGLIGIBLE))
    row["blend_soft"] = float(np.mean(w < 1.0 - SOFT_NEGLIGIBLE))
    return row


def run_routing(
    sets: Sequence[str] = DEFAULT_SETS,
    n_test: int | None = None,
    cell_size="auto",
    tune: bool = False,
    out: TextIO = sys.stdout,
    overlap: float = 1.0,
) -> list[dict]:
    """Every set's row, printed as it comes."""
    table = columns(
        "set <18 | n >7d | test >6d | cells >5d | fit s >7.1f | hard >7.2f% | "
        "logistic >9.2f% | soft >7.2f% | blended (logistic) >19.1f% | blended (soft) >15.1f%"
    )
    print(
        f"CellSVC(cell_size={cell_size!r}, overlap={overlap:g}, tune={tune}, random_state=0),"
        " one fit per set",
        file=out,
    )
    print_table(table, [], out)
    rows = []
    for name in sets:
        r = run_one(name, n_test, cell_size, tune, overlap)
        rows.append(r)
        line = [r["set"], r["n"], r["test"], r["cells"], r["fit_s"]]
        line += [100 * r[k] for k in ("hard", "logistic", "soft", "blend_log", "blend_soft")]
        print_table(table, [line], out, head=False)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(DEFAULT_SETS))
    parser.add_argument("--n-test", type=int, default=None)
    parser.add_argument("--cell-size", default="auto")
    parser.add_argument("--overlap", type=float, default=1.0)
    parser.add_argument("--tune", action="store_true")
    args = parser.parse_args(argv)
    size = args.cell_size if args.cell_size == "auto" else int(args.cell_size)
    run_routing(args.sets, args.n_test, size, args.tune, overlap=args.overlap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
