"""Command line: ``python -m localsvm demo`` (or the ``localsvm`` script).

``demo``  trains localsvm's SVC and scikit-learn's SVC on bundled data and
          prints accuracy, support vectors, fit and predict time and the
          backend used, side by side.
``info``  lists the registered backends, strategies and engines.
``bench`` times localsvm against scikit-learn, scikit-learn-intelex and
          ThunderSVM on the same data; ``bench local`` times one global RBF
          SVM against ProfileSVC's local ones (see :mod:`localsvm.bench`);
          ``bench sparse`` times sparse (CSR) input and measures its memory
          (see :mod:`localsvm.bench_sparse`); ``bench scale`` times CellSVC
          against the global SVC at 10⁵–10⁶ rows (see
          :mod:`localsvm.bench_scale`); ``bench online`` times one pass of
          IncrementalSVC's partial_fit against batch fits on the same rows
          (see :mod:`localsvm.bench_online`).
``reproduce NAME``
          runs one of the papers' experiments (see :mod:`localsvm.experiments`).
``train``, ``predict``
          LIBSVM's ``svm-train`` and ``svm-predict`` (see :mod:`localsvm.cli`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._argtypes import names as _names
from ._argtypes import positive_int as _positive_int
from ._argtypes import positive_ints as _positive_ints
from ._argtypes import sizes as _sizes


@dataclass
class Case:
    """One demo data set: its arrays, the SVC parameters, what to compare."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    params: dict
    backends: tuple[str, ...]
    note: str = ""


def _cases(quick: bool) -> list[Case]:
    from .datasets import load_banana, load_ijcnn1, load_usps

    b = load_banana(0)
    cases = [
        Case(
            "banana (400 / 4900)",
            b.X_train,
            b.y_train,
            b.X_test,
            b.y_test,
            {"C": 1.0, "gamma": 1.0},
            ("rust",) if quick else ("rust", "scipy"),
        )
    ]
    j = load_ijcnn1()
    rng = np.random.default_rng(0)
    tr = np.sort(rng.choice(j.y_train.shape[0], 10_000, replace=False))
    te = np.sort(rng.choice(j.y_test.shape[0], 10_000, replace=False))
    cases.append(
        Case(
            "ijcnn1 (10k / 10k sample)",
            j.X_train[tr],
            j.y_train[tr],
            j.X_test[te],
            j.y_test[te],
            {"C": 1.0, "gamma": "scale"},
            ("rust",),
        )
    )
    if not quick:
        u = load_usps()
        cases.append(
            Case(
                "usps 10 classes (7291 / 2007)",
                u.X_train,
                u.y_train,
                u.X_test,
                u.y_test,
                {"C": 10.0, "gamma": "scale"},
                ("rust",),
                note="one-vs-one, gamma='scale', raw pixels: not the set-up of J. Ulén, "
                "'Support Vector Machines' (student project report, Lund University), whose "
                "4.38 % is one-vs-rest on smoothed images; reproduce usps runs that set-up",
            )
        )
    return cases


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_demo(quick: bool = False, out=sys.stdout) -> list[dict]:
    """Train on the bundled data and print the comparison table; returns the rows."""
    from sklearn.svm import SVC as SklearnSVC

    from .svc import SVC

    rows = []
    header = (
        f"{'data set':<31} {'model':<24} {'accuracy':>9} {'error':>7} {'SVs':>6} "
        f"{'fit s':>7} {'predict s':>9}"
    )
    print(header, file=out)
    print("-" * len(header), file=out)
    for case in _cases(quick):
        models: list[tuple[str, object]] = [
            (f"localsvm SVC [{b}]", SVC(backend=b, **case.params)) for b in case.backends
        ]
        models.append(("scikit-learn SVC", SklearnSVC(**case.params)))
        for label, model in models:
            _, fit_s = _timed(lambda m=model, c=case: m.fit(c.X_train, c.y_train))
            pred, pred_s = _timed(lambda m=model, c=case: m.predict(c.X_test))
            acc = float(np.mean(pred == case.y_test))
            n_sv = len(model.support_)
            row = {
                "data": case.name,
                "model": label,
                "accuracy": acc,
                "support_vectors": n_sv,
                "fit_s": fit_s,
                "predict_s": pred_s,
                "backend": getattr(model, "backend_", "libsvm"),
            }
            rows.append(row)
            print(
                f"{case.name:<31} {label:<24} {acc:>9.4f} {100 * (1 - acc):>6.2f}% {n_sv:>6d} "
                f"{fit_s:>7.3f} {pred_s:>9.3f}",
                file=out,
            )
        if case.note:
            print(f"{'':<31} note: {case.note}", file=out)
    return rows


def run_info(out=sys.stdout) -> None:
    """Print what the plugin manager found."""
    from . import __version__, plugins

    print(f"localsvm {__version__}", file=out)
    for kind, names in (
        ("backends", plugins.list_backends()),
        ("similarities", plugins.list_similarities()),
        ("clusterings", plugins.list_clusterings()),
        ("engines", plugins.list_engines()),
    ):
        print(f"{kind:>13}: {', '.join(names)}", file=out)
    pm = plugins.get_plugin_manager()
    names = sorted(str(pm.get_name(p)) for p in pm.get_plugins())
    print(f"{'plugins':>13}: {', '.join(names)}", file=out)


#: What ``bench --datasets`` and ``--peers`` accept (kept in step with
#: :data:`localsvm.bench.CASES` and :data:`localsvm.bench.PEERS` by a test).
BENCH_DATASETS = ("ijcnn1", "a9a", "usps", "banana", "many26", "gen200k", "gen500k")
BENCH_PEERS = ("localsvm", "sklearn", "sklearnex", "thundersvm")
BENCH_SECTIONS = ("svc", "local", "sparse", "scale", "family", "online")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("train", "predict"):
        # LIBSVM-style options (-w1 2, -h 0) that argparse cannot express.
        from .cli import run

        return run(argv[0], argv[1:])
    from . import __version__

    parser = argparse.ArgumentParser(prog="localsvm", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"localsvm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "train",
        help="train a model on a LIBSVM/svmlight or CSV file, as svm-train (localsvm train --help)",
        add_help=False,
    )
    sub.add_parser(
        "predict",
        help="predict a data file with a model file, as svm-predict (localsvm predict --help)",
        add_help=False,
    )
    demo = sub.add_parser("demo", help="compare localsvm's SVC with scikit-learn's on bundled data")
    demo.add_argument(
        "--quick",
        action="store_true",
        help="skip the slow rows: the scipy reference backend and 10-class USPS",
    )
    sub.add_parser("info", help="list registered backends, strategies and engines")
    bench = sub.add_parser(
        "bench", help="time localsvm against scikit-learn, sklearnex and ThunderSVM"
    )
    bench.add_argument(
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
        "over ijcnn1 and a9a in chunks (--chunks) beside batch fits on the same rows",
    )
    bench.add_argument(
        "--n-train",
        type=_positive_int,
        default=None,
        help="bench local: training rows, the first of the 100000; bench sparse and "
        "bench online: training rows per data set (default: all); bench family: rows of "
        "every set (default: 10000, and all of ijcnn1's negative class for OneClassSVM)",
    )
    bench.add_argument(
        "--n-test",
        type=_positive_int,
        default=None,
        help="bench local: test rows, the first of the 41691 (default: all); bench scale: "
        "test rows of the generated data (default: 20000); bench online: test rows per "
        "data set (default: 20000)",
    )
    bench.add_argument(
        "--kappas",
        type=_sizes,
        default="4,16,64",
        help="bench local: comma-separated numbers of clusters κ (default: 4,16,64)",
    )
    bench.add_argument(
        "--datasets",
        type=_names("data set", BENCH_DATASETS),
        default="ijcnn1,a9a,usps",
        help=f"comma-separated, from: {', '.join(BENCH_DATASETS)} (default: ijcnn1,a9a,usps)",
    )
    bench.add_argument(
        "--peers",
        type=_names("peer", BENCH_PEERS),
        default="localsvm,sklearn,sklearnex,thundersvm",
        help=f"comma-separated, from: {', '.join(BENCH_PEERS)} (default: all)",
    )
    bench.add_argument(
        "--repeat", type=_positive_int, default=1, help="runs per timing, best kept (default: 1)"
    )
    bench.add_argument(
        "--scaling",
        type=_sizes,
        default="5000,10000,20000,49990",
        help="comma-separated ijcnn1 subsample sizes for the growth exponent ('' to skip)",
    )
    bench.add_argument("--no-memory", action="store_true", help="skip the peak-memory check")
    bench.add_argument(
        "--wide-rows",
        type=int,
        default=20_000,
        help="bench sparse: rows of the wide sparse set (0 skips it; default: 20000)",
    )
    bench.add_argument(
        "--sizes",
        type=_sizes,
        default="50000,200000,1000000",
        help="bench scale: comma-separated training sizes of the generated data "
        "(default: 50000,200000,1000000)",
    )
    bench.add_argument(
        "--max-global",
        type=_positive_int,
        default=200_000,
        help="bench scale: the global solvers run up to this many rows (default: 200000)",
    )
    bench.add_argument(
        "--no-exact", action="store_true", help="bench scale: skip SVC(init='cells')"
    )
    bench.add_argument("--no-ijcnn1", action="store_true", help="bench scale: skip ijcnn1")
    bench.add_argument(
        "--chunks",
        type=_positive_ints,
        default="1,100,1000",
        help="bench online: comma-separated rows per partial_fit call (default: 1,100,1000)",
    )
    bench.add_argument(
        "--rebatch-rows",
        type=int,
        default=1000,
        help="bench online: rows of the strategy='rebatch' baseline, which retrains a "
        "batch SVM at every example (0 skips it; default: 1000)",
    )
    from .experiments import EXPERIMENTS, load

    reproduce = sub.add_parser("reproduce", help="reproduce a paper's experiments")
    experiments = reproduce.add_subparsers(dest="experiment", required=True)
    for name, (_, help_text) in sorted(EXPERIMENTS.items()):
        load(name).add_arguments(experiments.add_parser(name, help=help_text))
    args = parser.parse_args(argv)
    if args.command == "demo":
        run_demo(quick=args.quick)
    elif args.command == "info":
        run_info()
    elif args.command == "bench" and args.section == "sparse":
        from .bench_sparse import SPARSE_CASES, run_sparse_bench

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
    elif args.command == "bench" and args.section == "family":
        from .bench_family import run_family

        run_family(
            n_train=args.n_train or 10_000,
            out=sys.stdout,
            n_one_class=args.n_train,
            repeat=args.repeat,
        )
    elif args.command == "bench" and args.section == "online":
        from .bench_online import ONLINE_CASES, run_online

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
    elif args.command == "bench" and args.section == "scale":
        from .bench_scale import run_scale

        run_scale(
            args.sizes,
            list(args.peers),
            ijcnn1=not args.no_ijcnn1,
            exact=not args.no_exact,
            max_global=args.max_global,
            n_test=args.n_test or 20_000,
            out=sys.stdout,
        )
    elif args.command == "bench":
        from .bench import run_bench

        peers = list(args.peers)
        if "localsvm" not in peers:
            peers.insert(0, "localsvm")
        if args.section == "local":
            from .bench import LOCAL_N_TRAIN, run_local

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
    elif args.command == "reproduce":
        load(args.experiment).run(args, out=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
