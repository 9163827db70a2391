"""Benchmarks of localsvm against its peers: ``python -m localsvm_benchmarks SECTION``
(also ``localsvm bench SECTION`` once this package is installed).

Sections: ``svc`` (the default: SVC against scikit-learn, scikit-learn-intelex
and ThunderSVM, the growth exponent and peak memory), ``local``, ``sparse``,
``scale``, ``family``, ``online``, ``engines``, ``cluster`` and ``tune``; ``--help``
says what each runs. Every section times with :func:`localsvm_benchmarks.report.timed`
and prints with :func:`localsvm_benchmarks.report.print_table`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from localsvm import list_engines
from localsvm._argtypes import fold_count as _fold_count
from localsvm._argtypes import names as _names
from localsvm._argtypes import positive_int as _positive_int
from localsvm._argtypes import positive_ints as _positive_ints
from localsvm._argtypes import sizes as _sizes

#: What ``bench --datasets`` and ``--peers`` accept (kept in step with
#: :data:`localsvm_benchmarks.svc.CASES` and :data:`localsvm_benchmarks.svc.PEERS` by a test).
BENCH_DATASETS = ("ijcnn1", "a9a", "usps", "banana", "many26", "gen200k", "gen500k")
BENCH_PEERS = ("localsvm", "sklearn", "sklearnex", "thundersvm")
BENCH_SECTIONS = (
    "svc",
    "local",
    "sparse",
    "scale",
    "family",
    "online",
    "engines",
    "cluster",
    "tune",
)
#: Peers only ``bench tune`` runs (kept in step with
#: :data:`localsvm_benchmarks.tune.TUNE_PEERS` by a test).
TUNE_ONLY_PEERS = ("liquidsvm",)
#: ``bench tune``'s data sets and training sizes when none are named.
TUNE_DEFAULT_DATASETS = "a9a,ijcnn1,usps"
TUNE_DEFAULT_SIZES = (5_000, 20_000)
#: ``bench scale``'s and ``bench cluster``'s training sizes when none are named.
SCALE_DEFAULT_SIZES = (50_000, 200_000, 1_000_000)
CLUSTER_DEFAULT_SIZES = (1_000_000, 10_000_000)


def build_parser(prog: str = "localsvm bench") -> argparse.ArgumentParser:
    """The command line of the benchmarks."""
    parser = argparse.ArgumentParser(
        prog=prog, description="time localsvm against scikit-learn, sklearnex and ThunderSVM"
    )
    parser.add_argument(
        "section",
        nargs="?",
        choices=BENCH_SECTIONS,
        default="svc",
        help="'svc' (default): the SVC table, scaling and memory sections; 'local': one "
        "global RBF SVC against ProfileSVC(kernel='rbf') for several κ on ijcnn1's "
        "100000 / 41691 split; 'sparse': CSR input on a9a and ijcnn1 against "
        "scikit-learn on the same CSR and localsvm's dense path, its peak memory, and a "
        "wide 20000 x 100000 sparse set; 'scale': CellSVC against the global SVC, its "
        "exact mode, a k-means partition baseline and the peers on 50000 to 1000000 "
        "generated rows and on all of ijcnn1; 'family': SVR, NuSVR, OneClassSVM and "
        "NuSVC against scikit-learn's; 'online': one pass of IncrementalSVC's partial_fit "
        "over ijcnn1 and a9a in chunks (--chunks) beside batch fits on the same rows; "
        "'engines': the threads engine against the dask engine (a Dask LocalCluster of "
        "--workers processes) on the same work; 'cluster': CellSVC on Dask arrays generated "
        "on a LocalCluster whose workers each hold less than the data (--sizes, --workers, "
        "--memory-limit), against the in-memory fit, and on a memmap (--memmap-rows); "
        "'tune': the time to a tuned model (search + refit) of SVCCV against GridSearchCV "
        "over localsvm's, scikit-learn's and scikit-learn-intelex's SVC and liquidSVM's own "
        "tuning on a9a, ijcnn1 and USPS subsamples (--sizes), SVRCV against GridSearchCV "
        "over SVR (--svr-rows), and CellSVC(tune=True) at 200000 generated rows "
        "(--cells-rows)",
    )
    parser.add_argument(
        "--n-train",
        type=_positive_int,
        default=None,
        help="bench local: training rows, the first of the 100000; bench sparse and "
        "bench online: training rows per data set (default: all); bench family: rows of "
        "every set (default: 10000, and all of ijcnn1's negative class for OneClassSVM); "
        "bench engines: ijcnn1 rows of the ProfileSVC work (default: all)",
    )
    parser.add_argument(
        "--n-test",
        type=_positive_int,
        default=None,
        help="bench local: test rows, the first of the 41691 (default: all); bench scale: "
        "test rows of the generated data (default: 20000); bench online: test rows per "
        "data set (default: 20000); bench tune: test rows per data set, a fixed random "
        "subset of its own test split (default: all)",
    )
    parser.add_argument(
        "--kappas",
        type=_sizes,
        default="4,16,64",
        help="bench local: comma-separated numbers of clusters κ (default: 4,16,64)",
    )
    parser.add_argument(
        "--datasets",
        type=_names("data set", BENCH_DATASETS),
        default=None,
        help=f"comma-separated, from: {', '.join(BENCH_DATASETS)} (default: ijcnn1,a9a,usps; "
        f"bench tune: {TUNE_DEFAULT_DATASETS}, the only ones it runs)",
    )
    parser.add_argument(
        "--peers",
        type=_names("peer", BENCH_PEERS + TUNE_ONLY_PEERS),
        default=None,
        help=f"comma-separated, from: {', '.join(BENCH_PEERS + TUNE_ONLY_PEERS)} (default: "
        "all; liquidsvm and no thundersvm in bench tune)",
    )
    parser.add_argument(
        "--repeat", type=_positive_int, default=1, help="runs per timing, best kept (default: 1)"
    )
    parser.add_argument(
        "--scaling",
        type=_sizes,
        default="5000,10000,20000,49990",
        help="comma-separated ijcnn1 subsample sizes for the growth exponent ('' to skip)",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory check")
    parser.add_argument(
        "--wide-rows",
        type=int,
        default=20_000,
        help="bench sparse: rows of the wide sparse set (0 skips it; default: 20000)",
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="bench scale and bench cluster: comma-separated training sizes of the generated "
        "data (default: 50000,200000,1000000 for scale, 1000000,10000000 for cluster); "
        "bench tune: training rows drawn from each data set's training split (default: "
        "5000,20000; a size beyond a set's rows runs all of them once)",
    )
    parser.add_argument(
        "--max-global",
        type=_positive_int,
        default=200_000,
        help="bench scale: the global solvers run up to this many rows (default: 200000)",
    )
    parser.add_argument(
        "--no-exact", action="store_true", help="bench scale: skip SVC(init='cells')"
    )
    parser.add_argument("--no-ijcnn1", action="store_true", help="bench scale: skip ijcnn1")
    parser.add_argument(
        "--chunks",
        type=_positive_ints,
        default="1,100,1000",
        help="bench online: comma-separated rows per partial_fit call (default: 1,100,1000)",
    )
    parser.add_argument(
        "--rebatch-rows",
        type=int,
        default=1000,
        help="bench online: rows of the strategy='rebatch' baseline, which retrains a "
        "batch SVM at every example (0 skips it; default: 1000)",
    )
    parser.add_argument(
        "--workers",
        type=_positive_int,
        default=2,
        help="bench engines: Dask worker processes, and n_jobs of the threads engine; bench "
        "cluster: single-threaded Dask worker processes (default: 2)",
    )
    parser.add_argument(
        "--memory-limit",
        default="512MiB",
        help="bench cluster: each worker's memory limit (default: 512MiB)",
    )
    parser.add_argument(
        "--chunk-rows",
        type=_positive_int,
        default=250_000,
        help="bench cluster: rows per generated block (default: 250000)",
    )
    parser.add_argument(
        "--cell-size",
        type=_positive_int,
        default=2000,
        help="bench cluster: CellSVC's cell_size (default: 2000)",
    )
    parser.add_argument(
        "--overlap",
        type=float,
        default=0.5,
        help="bench cluster: CellSVC's overlap (default: 0.5)",
    )
    parser.add_argument(
        "--compare-rows",
        type=int,
        default=1_000_000,
        help="bench cluster: sizes up to this are also fitted in memory (default: 1000000)",
    )
    parser.add_argument(
        "--memmap-rows",
        type=int,
        default=0,
        help="bench cluster: rows of the float64 memmap fitted in a child process "
        "(0 skips it; default: 0)",
    )
    parser.add_argument(
        "--grid",
        type=_positive_ints,
        default="10,10",
        help="bench tune: points of the C and gamma grid, C over 1e-1..1e3 and gamma over "
        "gamma_scale times 1e-2..10^1.5, log-spaced (default: 10,10)",
    )
    parser.add_argument(
        "--folds",
        type=_fold_count,
        default=5,
        help="bench tune: cross-validation folds, stratified and shuffled by random_state=0, "
        "the same for every route (default: 5)",
    )
    parser.add_argument(
        "--max-sklearn",
        type=int,
        default=5000,
        help="bench tune: GridSearchCV over scikit-learn's SVC runs up to this many training "
        "rows (it takes minutes per search beyond; 0 skips it; default: 5000)",
    )
    parser.add_argument(
        "--max-sklearnex",
        type=int,
        default=20_000,
        help="bench tune: GridSearchCV over scikit-learn-intelex's SVC runs up to this many "
        "training rows (0 skips it; default: 20000)",
    )
    parser.add_argument(
        "--svr-rows",
        type=int,
        default=5000,
        help="bench tune: training (and test) rows of the SVRCV regression problem "
        "(0 skips it; default: 5000)",
    )
    parser.add_argument(
        "--svr-grid",
        type=_positive_ints,
        default="5,5,4",
        help="bench tune: points of the SVR grid's C, gamma and epsilon (default: 5,5,4)",
    )
    parser.add_argument(
        "--cells-rows",
        type=int,
        default=0,
        help="bench tune: training rows of bench scale's generated problem for "
        "CellSVC(tune=True), whose cells each choose C and gamma, and CellSVC(tune=False) "
        "against SVCCV on a subsample and one SVC on every row (slow: try 200000; "
        "default: 0, skipped)",
    )
    parser.add_argument(
        "--cells-subsample",
        type=_positive_int,
        default=20_000,
        help="bench tune: rows SVCCV tunes on before the global SVC (default: 20000)",
    )
    parser.add_argument(
        "--cells-params",
        default="",
        help="bench tune: with --cells-rows, one more row of CellSVC(tune=True) with these "
        "settings, written name=value,name=value (e.g. tune_size=5000,Cs=10; default: none)",
    )
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "localsvm bench") -> int:
    """Run the benchmark section that ``argv`` names; returns the exit code."""
    parser = build_parser(prog)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.section == "tune":
        return _tune(parser, args)
    if args.datasets is None:
        args.datasets = ["ijcnn1", "a9a", "usps"]
    if args.peers is None:
        args.peers = list(BENCH_PEERS)
    if TUNE_ONLY_PEERS[0] in args.peers:
        parser.error(f"--peers {TUNE_ONLY_PEERS[0]}: only bench tune runs it")
    if args.section == "sparse":
        from .sparse import SPARSE_CASES, run_sparse_bench

        datasets = [d for d in args.datasets if d in SPARSE_CASES]
        if not datasets:
            parser.error(f"bench sparse runs on {', '.join(SPARSE_CASES)}; name one in --datasets")
        run_sparse_bench(
            datasets,
            [p for p in args.peers if p in ("localsvm", "sklearn")] or ["localsvm"],
            n_train=args.n_train,
            memory_check=not args.no_memory,
            wide_rows=args.wide_rows or None,
        )
    elif args.section == "family":
        from .family import run_family

        run_family(
            n_train=args.n_train or 10_000,
            out=sys.stdout,
            n_one_class=args.n_train,
            repeat=args.repeat,
        )
    elif args.section == "online":
        from .online import ONLINE_CASES, run_online

        datasets = [d for d in args.datasets if d in ONLINE_CASES]
        if not datasets:
            parser.error(f"bench online runs on {', '.join(ONLINE_CASES)}; name one in --datasets")
        if args.rebatch_rows < 0:
            parser.error(f"--rebatch-rows must be 0 or more, got {args.rebatch_rows}")
        run_online(
            datasets,
            n_train=args.n_train,
            n_test=args.n_test or 20_000,
            chunks=args.chunks,
            rebatch_rows=args.rebatch_rows,
            out=sys.stdout,
        )
    elif args.section == "engines":
        from .engines import DASK_MISSING, run_engines

        if "dask" not in list_engines():
            parser.error(DASK_MISSING)
        run_engines(args.workers, args.repeat, profile_rows=args.n_train, out=sys.stdout)
    elif args.section == "cluster":
        from .cluster import run_cluster

        run_cluster(
            args.sizes if args.sizes is not None else list(CLUSTER_DEFAULT_SIZES),
            n_test=args.n_test or 1_000_000,
            workers=args.workers,
            memory_limit=args.memory_limit,
            chunk_rows=args.chunk_rows,
            cell_size=args.cell_size,
            overlap=args.overlap,
            compare_rows=args.compare_rows,
            memmap_rows=args.memmap_rows,
            out=sys.stdout,
        )
    elif args.section == "scale":
        from .scale import run_scale

        run_scale(
            args.sizes if args.sizes is not None else list(SCALE_DEFAULT_SIZES),
            list(args.peers),
            ijcnn1=not args.no_ijcnn1,
            exact=not args.no_exact,
            max_global=args.max_global,
            n_test=args.n_test or 20_000,
            out=sys.stdout,
        )
    else:
        from .svc import run_bench

        peers = list(args.peers)
        if "localsvm" not in peers:
            peers.insert(0, "localsvm")
        if args.section == "local":
            from .svc import LOCAL_N_TRAIN, run_local

            run_local(
                peers,
                kappas=args.kappas,
                n_train=args.n_train or LOCAL_N_TRAIN,
                n_test=args.n_test,
                out=sys.stdout,
            )
            return 0
        run_bench(
            args.datasets,
            peers,
            repeat=args.repeat,
            scaling_sizes=args.scaling,
            memory_check=not args.no_memory,
        )
    return 0


def _tune(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from .tune import TUNE_DATASETS, TUNE_PEERS

    datasets = args.datasets or TUNE_DEFAULT_DATASETS.split(",")
    datasets = [d for d in datasets if d in TUNE_DATASETS]
    if not datasets:
        parser.error(f"bench tune runs on {', '.join(TUNE_DATASETS)}; name one in --datasets")
    peers = list(TUNE_PEERS) if args.peers is None else args.peers
    if "thundersvm" in peers:
        parser.error(f"bench tune's peers are {', '.join(TUNE_PEERS)}; not thundersvm")
    if len(args.grid) != 2:
        parser.error(f"--grid takes two counts (C, gamma), got {len(args.grid)}")
    if len(args.svr_grid) != 3:
        parser.error(f"--svr-grid takes three counts (C, gamma, epsilon), got {len(args.svr_grid)}")
    for flag in ("max_sklearn", "max_sklearnex", "svr_rows", "cells_rows"):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')} must be 0 or more, got {getattr(args, flag)}")
    if 0 < args.svr_rows < 2 * args.folds:
        parser.error(f"--svr-rows must be 0 or at least 2 per fold, got {args.svr_rows}")
    if 0 < args.cells_rows < 2 * args.folds:
        parser.error(f"--cells-rows must be 0 or at least 2 per fold, got {args.cells_rows}")
    from .tune import parse_cells_params

    try:
        args.cells_params = parse_cells_params(args.cells_params)
    except ValueError as err:
        parser.error(f"--cells-params: {err}")
    try:
        _run_tune(args, datasets, peers)
    except KeyboardInterrupt:
        print("bench tune: interrupted", file=sys.stderr)
        return 130
    return 0


def _run_tune(args: argparse.Namespace, datasets: list[str], peers: list[str]) -> None:
    from .tune import run_tune

    run_tune(
        datasets,
        args.sizes or list(TUNE_DEFAULT_SIZES),
        peers,
        grid=args.grid,
        n_folds=args.folds,
        n_test=args.n_test,
        max_sklearn=args.max_sklearn,
        max_sklearnex=args.max_sklearnex,
        repeat=args.repeat,
        svr_rows=args.svr_rows,
        svr_grid=args.svr_grid,
        cells_rows=args.cells_rows,
        cells_subsample=args.cells_subsample,
        cells_params=args.cells_params,
        out=sys.stdout,
    )


if __name__ == "__main__":
    raise SystemExit(main(prog="python -m localsvm_benchmarks"))
