"""Command line: ``python -m localsvm demo`` (or the ``localsvm`` script).

``demo``  trains localsvm's SVC and scikit-learn's SVC on bundled data and
          prints accuracy, support vectors, fit and predict time and the
          backend used, side by side.
``info``  lists the registered backends, strategies and engines.
``bench SECTION``
          times localsvm against its peers; ``reproduce NAME`` runs one of
          the papers' experiments. Both are applications of the library that
          live in their own packages (``benchmarks/`` and ``experiments/`` of
          the repository) and run once those are installed.
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


#: Rows of the scipy reference backend's case: its dense SLSQP solve grows
#: steeply with the rows (4.9 s on 400 banana rows on an idle machine,
#: minutes under load), so it gets a sample it handles in about a second.
REFERENCE_ROWS = 200


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
            ("rust",),
        )
    ]
    if not quick:
        pick = np.sort(
            np.random.default_rng(0).choice(b.y_train.shape[0], REFERENCE_ROWS, replace=False)
        )
        cases.append(
            Case(
                f"banana ({REFERENCE_ROWS} of 400 / 4900)",
                b.X_train[pick],
                b.y_train[pick],
                b.X_test,
                b.y_test,
                {"C": 1.0, "gamma": 1.0},
                ("rust", "scipy"),
                note="the scipy backend (SLSQP on the dense dual, one BLAS thread) is the "
                "reference solver: the same model, on a sample of a size it handles",
            )
        )
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
    # The demo's one timing; the library does not import its applications,
    # so this stands in for localsvm_benchmarks.report.timed (one call, same
    # order: result, seconds).
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def run_demo(quick: bool = False, out=None, progress=None) -> list[dict]:
    """Train on the bundled data and print the comparison table; returns the rows.

    Each row is printed (and flushed) as soon as its model is fitted and
    has predicted; before each fit a line on ``progress`` says which model
    runs next, so a slow row never leaves the terminal silent.

    Parameters
    ----------
    quick : bool, default=False
        Leave out the scipy reference backend's case and 10-class USPS.
    out : file-like or None, default=None
        Where the table goes (None: standard output).
    progress : file-like or None, default=None
        Where the progress lines go (None: standard error).

    Returns
    -------
    list of dict
        One dict per row: data, model, accuracy, support vectors, fit and
        predict seconds, backend.
    """
    from contextlib import nullcontext

    from sklearn.svm import SVC as SklearnSVC

    from .parallel import one_blas_thread
    from .svc import SVC

    out = sys.stdout if out is None else out
    progress = sys.stderr if progress is None else progress
    rows = []
    header = (
        f"{'data set':<31} {'model':<24} {'accuracy':>9} {'error':>7} {'SVs':>6} "
        f"{'fit s':>7} {'predict s':>9}"
    )
    print(header, file=out, flush=True)
    print("-" * len(header), file=out, flush=True)
    cases = _cases(quick)
    # One untimed fit of each library first: a process's first fit also finds
    # the plugins and imports what validation needs, which no later fit pays.
    print("... warming up (one untimed small fit each)", file=progress, flush=True)
    first = cases[0]
    for warm in (SVC(**first.params), SklearnSVC(**first.params)):
        warm.fit(first.X_train[:50], first.y_train[:50])
    for case in cases:
        models: list[tuple[str, object]] = [
            (f"localsvm SVC [{b}]", SVC(backend=b, **case.params)) for b in case.backends
        ]
        models.append(("scikit-learn SVC", SklearnSVC(**case.params)))
        for label, model in models:
            print(f"... next: {case.name}, {label}", file=progress, flush=True)
            # The reference backend's dense products on one BLAS thread: many
            # threads on a busy machine slow it by an order of magnitude.
            scipy_row = getattr(model, "backend", None) == "scipy"
            with one_blas_thread() if scipy_row else nullcontext():
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
                flush=True,
            )
        if case.note:
            print(f"{'':<31} note: {case.note}", file=out, flush=True)
    print("... done", file=progress, flush=True)
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


#: The commands that live in their own distributions (benchmarks and the
#: papers' reproductions are applications of the library, not part of it):
#: command -> (module, the checkout folder that installs it).
APPLICATIONS = {
    "bench": ("localsvm_benchmarks.__main__", "./benchmarks"),
    "reproduce": ("localsvm_experiments.__main__", "./experiments"),
}


def _run_application(command: str, argv: Sequence[str]) -> int:
    import importlib

    module, folder = APPLICATIONS[command]
    try:
        app = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith(module.split(".")[0]):
            raise
        print(
            f"localsvm {command}: install its package first, from a checkout of the "
            f"repository: python3 -m pip install {folder}",
            file=sys.stderr,
        )
        return 2
    return app.main(argv, prog=f"localsvm {command}")


def _plain_text(text: str) -> str:
    """``text`` (reST from a docstring) as the plain text of a terminal:
    double backticks dropped and roles such as :mod:`x` reduced to their target,
    for argparse descriptions and help."""
    import re

    text = re.sub(r":[a-z]+(?::[a-z]+)?:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in APPLICATIONS:
        return _run_application(argv[0], argv[1:])
    if argv and argv[0] in ("train", "predict"):
        # LIBSVM-style options (-w1 2, -h 0) that argparse cannot express.
        from .cli import run

        return run(argv[0], argv[1:])
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="localsvm", description=_plain_text(__doc__.splitlines()[0])
    )
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
        help="skip the scipy reference backend's rows and 10-class USPS",
    )
    sub.add_parser("info", help="list registered backends, strategies and engines")
    sub.add_parser(
        "bench",
        help="time localsvm against its peers (localsvm bench --help; needs ./benchmarks)",
        add_help=False,
    )
    sub.add_parser(
        "reproduce",
        help="reproduce a paper's experiments (localsvm reproduce --help; needs ./experiments)",
        add_help=False,
    )
    args = parser.parse_args(argv)
    if args.command == "demo":
        run_demo(quick=args.quick)
    elif args.command == "info":
        run_info()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
