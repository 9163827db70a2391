"""The command line of ``python -m localsvm reproduce lsvm``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from localsvm_benchmarks.report import Stopwatch, add_experiment_options

from localsvm import _argtypes

from .data import DATASETS
from .figures import run_boundary, run_clusters
from .protocol import config
from .report import say
from .runtime import run_runtime
from .table1 import run_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the experiment's options to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``reproduce lsvm`` subcommand's parser.
    """
    add_experiment_options(
        parser,
        quick="2 repetitions, 3 folds, tiny grids, 150 + 150 training / 300, 600 test for "
        "Figure 4: a smoke run of seconds",
        repetitions="Table 1 repetitions (10)",
        folds="CV folds (10)",
        figures="localsvm-figures",
        datasets=tuple(DATASETS),
        datasets_help="comma-separated Table 1 data sets",
        timing="also time the methods as in Figure 4 (ijcnn1 standing in for Physics) and PSVM "
        "against a tuned SVC, printed after Table 1 and the figures",
        repeat="timed runs per model in the speed comparison (best kept)",
    )
    parser.add_argument("--skip-table", action="store_true", help="skip Table 1")
    parser.add_argument("--skip-figure", action="store_true", help="do not draw Figures 2 and 3")
    parser.add_argument(
        "--n-jobs", type=int, default=None, help="threads for localsvm and the CV (all CPUs)"
    )


def run(args: argparse.Namespace, out: TextIO) -> list[dict]:
    """Run the selected parts: Table 1 (one table), Figures 2 and 3 (images),
    and with ``--timing`` (alias ``--runtime``) Figure 4 and PSVM against a tuned SVC.

    Parameters
    ----------
    args : argparse.Namespace
        The options of :func:`add_arguments`.
    out : TextIO
        Where the tables and messages are printed.

    Returns
    -------
    rows : list of dict
        Every part's rows, in the order run; each names its ``"section"``.
    """
    with Stopwatch() as clock:
        cfg = config(args)
        figdir = Path(args.out)
        say(
            out,
            "H. Cheng, P.-N. Tan and R. Jin, 'Localized Support Vector Machine and Its Efficient "
            "Algorithm', SIAM International Conference on Data Mining (SDM), 2007, reproduced",
        )
        if args.quick:
            say(out, "--quick: small grids and sizes, not the paper's protocol")
        rows: list[dict] = []
        if not args.skip_table:
            names = args.datasets
            if isinstance(names, str):  # a Namespace built by hand, not by the parser
                names = _argtypes.names("data set", tuple(DATASETS))(names)
            say(out)
            rows += run_table(cfg, names, args.n_jobs, out)
        if not getattr(args, "skip_figure", False):
            say(out)
            rows += run_clusters(figdir, out)
            rows += run_boundary(cfg, figdir, out)
        if getattr(args, "timing", False):
            rows += run_runtime(cfg, args.n_jobs, figdir, out)
        say(out)
    say(out, f"total time: {clock.seconds:.1f} s")
    return rows
