"""Benchmarks of localsvm against its peers: ``python -m localsvm_benchmarks SECTION``
(also ``localsvm bench SECTION`` once this package is installed).

Sections: ``svc`` (the default: SVC against scikit-learn, scikit-learn-intelex
and ThunderSVM, the growth exponent and peak memory), ``local``, ``sparse``,
``scale``, ``family``, ``online``, ``engines`` and ``cluster``; ``--help`` says what each
runs. Every section times with :func:`localsvm_benchmarks.report.timed` and
prints with :func:`localsvm_benchmarks.report.print_table`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from localsvm import list_engines
from localsvm._argtypes import names as _names
from localsvm._argtypes import positive_int as _positive_int
from localsvm._argtypes import positive_ints as _positive_ints
from localsvm._argtypes import sizes as _sizes

#: What ``bench --datasets`` and ``--peers`` accept (kept in step with
#: :data:`localsvm_benchmarks.svc.CASES` and :data:`localsvm_benchmarks.svc.PEERS` by a test).
BENCH_DATASETS = ("ijcnn1", "a9a", "usps", "banana", "many26", "gen200k", "gen500k")
BENCH_PEERS = ("localsvm", "sklearn", "sklearnex", "thundersvm")
BENCH_SECTIONS = ("svc", "local", "sparse", "scale", "family", "online", "engines", "cluster")


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
        "--memory-limit), against the in-memory fit, and on a memmap (--memmap-rows)",
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
        "data set (default: 20000)",
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
        default="ijcnn1,a9a,usps",
        help=f"comma-separated, from: {', '.join(BENCH_DATASETS)} (default: ijcnn1,a9a,usps)",
    )
    parser.add_argument(
        "--peers",
        type=_names("peer", BENCH_PEERS),
        default="localsvm,sklearn,sklearnex,thundersvm",
        help=f"comma-separated, from: {', '.join(BENCH_PEERS)} (default: all)",
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
        "data (default: 50000,200000,1000000 for scale, 1000000,10000000 for cluster)",
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
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "localsvm bench") -> int:
    """Run the benchmark section that ``argv`` names; returns the exit code."""
    parser = build_parser(prog)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
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
            args.sizes if args.sizes is not None else [1_000_000, 10_000_000],
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
            args.sizes if args.sizes is not None else [50_000, 200_000, 1_000_000],
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


if __name__ == "__main__":
    raise SystemExit(main(prog="python -m localsvm_benchmarks"))
