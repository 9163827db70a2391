"""``python -m localsvm bench``: localsvm's SVC next to the SVMs users would
otherwise pick, on the same data in the same run.

Peers: scikit-learn's ``SVC`` (LIBSVM), scikit-learn-intelex's ``SVC``
(oneDAL) and ThunderSVM's ``SVC``; a peer that is not installed is skipped and
the output says so. Every implementation gets the same ``C``, ``gamma``,
``tol=1e-3`` and ``cache_size=200``; the table shows fit and predict time
(the best of ``--repeat`` runs, after one untimed warm-up fit on a few
hundred examples), test accuracy, the dual objective reached
(recomputed from each model's support vectors and coefficients), for each
peer how many times longer it took than localsvm, and for localsvm the kernel
values its fit computed next to their floor ``n_SV · n`` (every support
vector's column is computed at least once; the ratio shows how far the cache
keeps the solver from that limit). A second table times localsvm's
prediction again in float64 (the default of a model read from a LIBSVM
file) next to the precision of its fit, with the number of labels that
differ. A third gives the rate of localsvm's kernel arithmetic: its kernel
values times ``2·d`` flops each (``d`` differences and ``d`` fused
multiply-adds per RBF value) over the fit time, in GFlop/s and as a
fraction of what a float32 matrix product (numpy's ``float32`` ``@`` on
2048 × 2048 matrices, BLAS's sgemm) reaches on the same machine in the
same run (timed before and after the fits, the better rate kept, so a
slowdown of the machine during one of them does not inflate the share),
and as a fraction of the rate of a float32 product of the kernel
columns' own shape (the ``n × d`` training matrix times a ``d × 1024`` one,
:func:`panel_product_rate`): with a small inner dimension ``d`` that product
writes one value per ``2·d`` flops, so even BLAS stays far below its square
rate, and this column says how close the kernel arithmetic comes to BLAS on
the same shape. Optional sections: how fit
time grows with the training-set size (the fitted exponent of ``time ∝ nᵏ``
on ijcnn1 subsamples), and localsvm's peak memory during ``fit`` next to its
bound ``cache_size + 2·X + b·n + 128 MB`` (X the training data as float64,
``b`` = :data:`MEMORY_BYTES_PER_ROW`, 300 bytes).

``bench local`` (:func:`run_local`): one global RBF SVM against
``ProfileSVC(kernel='rbf')`` with several numbers of clusters, on ijcnn1's
141 691 rows split 100 000 / 41 691.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from localsvm._objective import libsvm_dual_objectives
from localsvm.kernels import KernelSpec, resolve_gamma

from .data import LOCAL_N_TRAIN, generated, local_split, many_classes
from .report import Column, columns, timed
from .report import print_table as print_columns

COMMON = {"kernel": "rbf", "tol": 1e-3, "cache_size": 200}


@dataclass
class Case:
    """A benchmark data set and the SVC parameters used on it."""

    name: str
    load: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    params: dict = field(default_factory=dict)


def _split(name: str) -> Callable[[], tuple]:
    def load():
        from localsvm.datasets import load_dataset

        d = load_dataset(name)
        return d.X_train, d.y_train, d.X_test, d.y_test

    return load


def _many_classes() -> tuple:
    """A synthetic 26-class problem (the size of UCI letter): 20 000 rows of
    16 features from scikit-learn's ``make_classification``, split 15 000 for
    training and 5 000 for testing. One-vs-one makes 325 pairs over some
    thousands of support vectors, so prediction time is dominated by how the
    pairs share kernel values."""
    X, y = many_classes(20_000)
    return X[:15_000], y[:15_000], X[15_000:], y[15_000:]


#: SVC parameters on the generated problems: ``bench scale``'s (C = 1, a
#: 2000 MB kernel cache for the long solves).
_GENERATED = {"C": 1.0, "gamma": "scale", "cache_size": 2000}


CASES = {
    "ijcnn1": Case("ijcnn1", _split("ijcnn1"), {"C": 1.0, "gamma": "scale"}),
    "a9a": Case("a9a", _split("a9a"), {"C": 1.0, "gamma": "scale"}),
    "usps": Case("usps", _split("usps"), {"C": 10.0, "gamma": "scale"}),
    "banana": Case("banana", _split("banana"), {"C": 1.0, "gamma": 1.0}),
    "many26": Case("many26", _many_classes, {"C": 1.0, "gamma": 0.0625}),
    # Not run by default: the generated problem of ``bench scale`` (see
    # :func:`localsvm_benchmarks.scale.generated`), where the global SMO's cost
    # grows fastest.
    "gen200k": Case("gen200k", lambda: generated(200_000), _GENERATED),
    "gen500k": Case("gen500k", lambda: generated(500_000), _GENERATED),
}

#: Data sets of two classes from :mod:`localsvm.datasets`, those the memory
#: check loads (with 50 and 200 MB caches).
BINARY_DATASETS = ("ijcnn1", "a9a", "banana")
#: The generated sets, checked with their own cache (2000 MB), where the
#: batched working sets' kernel columns must fit inside it.
GENERATED_DATASETS = ("gen200k", "gen500k")

PEERS = ("localsvm", "sklearn", "sklearnex", "thundersvm")


def make_estimator(peer: str, params: dict) -> tuple[Any | None, str]:
    """An unfitted SVC of ``peer``, or ``None`` and the reason it is skipped."""
    kw = {**COMMON, **params}
    if peer == "localsvm":
        from localsvm.svc import SVC

        return SVC(**kw), ""
    if peer == "sklearn":
        from sklearn.svm import SVC as SklearnSVC

        return SklearnSVC(**kw), ""
    if peer == "sklearnex":
        try:
            from sklearnex.svm import SVC as IntelSVC
        except ImportError:
            return None, "not installed (pip install scikit-learn-intelex)"
        return IntelSVC(**kw), ""
    if peer == "thundersvm":
        try:
            from thundersvm import SVC as ThunderSVC
        except Exception as exc:  # ImportError, or a missing shared library
            return None, f"not usable ({type(exc).__name__}: {exc})"
        return ThunderSVC(**kw), ""
    raise ValueError(f"unknown peer {peer!r}; choose from {', '.join(PEERS)}")


#: Order of the float32 matrix product timed for :func:`sgemm_rate`.
SGEMM_ORDER = 2048


def sgemm_rate(order: int = SGEMM_ORDER, repeat: int = 3) -> float:
    """GFlop/s of a float32 matrix product of two ``order × order``
    matrices through numpy (BLAS's sgemm, on every core BLAS uses): the
    best of ``repeat`` runs after one untimed."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((order, order), dtype=np.float32)
    b = rng.standard_normal((order, order), dtype=np.float32)
    a @ b
    _, seconds = timed(lambda: a @ b, repeat)
    return 2.0 * order**3 / seconds / 1e9


#: Columns of the product timed by :func:`panel_product_rate`: a working
#: set's worth of kernel columns.
PANEL_COLUMNS = 1024

#: Rows per piece of that product; the pieces share one output of
#: ``PANEL_PIECE_ROWS · PANEL_COLUMNS`` float32 values (64 MB).
PANEL_PIECE_ROWS = 16384

#: The product is skipped (``None``) when its ``n × d`` operand would take
#: more than this many bytes.
PANEL_MAX_BYTES = 1 << 30


def panel_product_rate(
    n: int, d: int, columns: int = PANEL_COLUMNS, repeat: int = 3
) -> float | None:
    """GFlop/s of the float32 product of an ``n × d`` matrix with a
    ``d × columns`` one through numpy (BLAS's sgemm), ``PANEL_PIECE_ROWS``
    rows at a time into one reused output: a product of the shape the
    kernel columns of ``n`` rows and ``d`` features have, without the kernel
    function or the solver. The best of ``repeat`` runs after one untimed;
    ``None`` when the ``n × d`` operand would exceed ``PANEL_MAX_BYTES``."""
    if n < 1 or d < 1 or 4 * n * d > PANEL_MAX_BYTES:
        return None
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, d), dtype=np.float32)
    b = rng.standard_normal((d, columns), dtype=np.float32)
    out = np.empty((min(n, PANEL_PIECE_ROWS), columns), dtype=np.float32)

    def product() -> None:
        for start in range(0, n, PANEL_PIECE_ROWS):
            piece = a[start : start + PANEL_PIECE_ROWS]
            np.matmul(piece, b, out=out[: piece.shape[0]])

    product()
    _, seconds = timed(product, repeat)
    return 2.0 * n * d * columns / seconds / 1e9


def dual_objective(peer: str, model, X: np.ndarray, params: dict) -> float:
    """The total dual objective over the model's binary problems (NaN when
    the model does not expose LIBSVM's attributes)."""
    if peer == "localsvm":
        return float(np.sum(model.dual_objective_))
    try:
        spec = KernelSpec("rbf", gamma=resolve_gamma(params["gamma"], X))
        return float(np.sum(libsvm_dual_objectives(model, spec)))
    except (AttributeError, ValueError, IndexError):
        return float("nan")


def kernel_counts(model, y: np.ndarray) -> tuple[int, int] | None:
    """``(kernel evaluations, floor)`` of a fitted localsvm ``SVC``: the
    kernel values its binary solves computed, summed, and the least any
    solver computing every support vector's column at least once needs,
    ``Σ n_SV · n`` over the binary problems (their support vectors times
    their examples). None when the backend does not count evaluations."""
    evals = getattr(model, "kernel_evaluations_", None)
    if evals is None or np.any(evals < 0):
        return None
    y_idx = np.searchsorted(model.classes_, y)
    tasks = model._binary_tasks(model.classes_.shape[0], y_idx)
    floor = sum(
        int(np.count_nonzero(coef)) * rows.size
        for (rows, _), coef in zip(tasks, model._model_coef, strict=True)
    )
    return int(np.sum(evals)), floor


def run_case(case: Case, peers: list[str], repeat: int, out: TextIO) -> list[dict]:
    """Fit and predict every available peer on ``case``; returns one row each."""
    X, y, Xt, yt = case.load()
    # The product of the kernel columns' shape, timed before and after the
    # fits, the better rate kept (see run_bench).
    panel_before = (
        panel_product_rate(int(X.shape[0]), int(X.shape[1])) if "localsvm" in peers else None
    )
    rows = []
    for peer in peers:
        est, why = make_estimator(peer, case.params)
        if est is None:
            print(f"  {case.name}: skipping {peer}: {why}", file=out)
            continue
        # An untimed fit on a small slice first, so one-time start-up costs
        # (thread pools, lazy imports, JIT dispatch tables) stay out of every
        # implementation's timings alike.
        warm = np.concatenate([np.flatnonzero(y == c)[:100] for c in np.unique(y)])
        est.fit(X[warm], y[warm])
        model, fit_s = timed(lambda e=est: e.fit(X, y), repeat)
        pred, pred_s = timed(lambda m=model: m.predict(Xt), repeat)
        counts = kernel_counts(model, y) if peer == "localsvm" else None
        f64 = {}
        if peer == "localsvm":
            pred64, pred64_s = timed(lambda m=model: predict_float64(m, Xt), repeat)
            f64 = {
                "predict64_s": pred64_s,
                "labels_changed_64": int(np.count_nonzero(pred64 != pred)),
                "precision": getattr(model, "precision_", "float64"),
            }
        rows.append(
            {
                **f64,
                "data": case.name,
                "peer": peer,
                "fit_s": fit_s,
                "predict_s": pred_s,
                "accuracy": float(np.mean(pred == yt)),
                "objective": dual_objective(peer, model, X, case.params),
                "n_sv": len(getattr(model, "support_", [])),
                "n_train": int(X.shape[0]),
                "n_features": int(X.shape[1]),
                "n_test": int(Xt.shape[0]),
                "kernel_evals": None if counts is None else counts[0],
                "kernel_floor": None if counts is None else counts[1],
            }
        )
        print(
            f"  {case.name}: {peer} fit {fit_s:.2f} s, predict {pred_s:.2f} s", file=out, flush=True
        )
    for r in rows:
        if r["peer"] == "localsvm" and r["kernel_evals"] is not None:
            after = panel_product_rate(int(X.shape[0]), int(X.shape[1]))
            runs = [v for v in (panel_before, after) if v]
            r["panel_gflops"] = max(runs) if runs else None
    return rows


def predict_float64(model, X) -> np.ndarray:
    """``model.predict(X)`` in float64 whatever precision ``model`` was fitted
    in (as a model loaded from a LIBSVM file predicts by default)."""
    saved = model.precision_
    model.precision_ = "float64"
    try:
        return model.predict(X)
    finally:
        model.precision_ = saved


def print_precision_table(rows: list[dict], out: TextIO) -> None:
    """localsvm's prediction time in the precision of its fit next to
    float64 (the precision of LIBSVM's arithmetic, and the default of a model
    read from a LIBSVM file), and how many predicted labels differ."""
    ours = [r for r in rows if "predict64_s" in r]
    if not ours:
        return
    table = columns(
        "data <8 | fit precision >13 | predict s >10.3f | float64 s >10.3f | "
        "float64 × >9.2f× | labels changed >15d"
    )
    print_columns(
        table,
        [
            (
                r["data"],
                r["precision"],
                r["predict_s"],
                r["predict64_s"],
                r["predict64_s"] / r["predict_s"],
                r["labels_changed_64"],
            )
            for r in ours
        ],
        out,
    )


def print_table(rows: list[dict], out: TextIO) -> None:
    """The ratio table: each peer's time over localsvm's (> 1: localsvm is
    faster), accuracy difference in points, objective difference (relative);
    for localsvm, the kernel evaluations of one fit next to their floor
    ``n_SV · n`` (every support vector's column computed once) and the
    ratio of the two."""
    table = columns(
        "data <8 | implementation <12 | fit s >8.2f | predict s >10.2f | accuracy >8.2f% | "
        "objective >14.4f | SVs >6d | fit × >6.1f× | predict × >9.1f× | Δacc pt >+8.2f | "
        "Δobj rel >9.1e | kernel evals >13.4g | floor n_SV·n >13.4g | evals/floor >10.2f×"
    )
    ours = {r["data"]: r for r in rows if r["peer"] == "localsvm"}
    lines = []
    for r in rows:
        base = ours.get(r["data"])
        ratios: tuple = (None,) * 4
        if base is not None and r["peer"] != "localsvm":
            d_obj = abs(r["objective"] - base["objective"]) / max(abs(base["objective"]), 1e-12)
            ratios = (
                r["fit_s"] / base["fit_s"],
                r["predict_s"] / base["predict_s"],
                100 * (r["accuracy"] - base["accuracy"]),
                d_obj,
            )
        evals, floor = r.get("kernel_evals"), r.get("kernel_floor")
        counts: tuple = (None,) * 3
        if evals is not None and floor is not None:
            counts = (evals, floor, evals / floor if floor else None)
        lines.append(
            (
                r["data"],
                r["peer"],
                r["fit_s"],
                r["predict_s"],
                100 * r["accuracy"],
                r["objective"],
                r["n_sv"],
                *ratios,
                *counts,
            )
        )
    print_columns(table, lines, out)


def print_rate_table(rows: list[dict], sgemm_gflops: float, out: TextIO) -> None:
    """localsvm's kernel arithmetic rate per data set: kernel values times
    ``2·d`` flops over the fit time, and that over the float32 matrix
    product's rate of the same run, then over the rate of a product of the
    kernel columns' shape (``panel_gflops`` of each row, from
    :func:`panel_product_rate`; ``—`` where it was not measured)."""
    ours = [r for r in rows if r["peer"] == "localsvm" and r.get("kernel_evals") is not None]
    if not ours:
        return
    print(
        f"float32 matrix product ({SGEMM_ORDER}×{SGEMM_ORDER}, numpy): {sgemm_gflops:.1f} GFlop/s",
        file=out,
    )
    print(
        f"shape: float32 product of the n × d training matrix by a d × {PANEL_COLUMNS} one"
        " (numpy), timed per data set",
        file=out,
    )
    print("(each product timed before and after the fits; the better rate kept)", file=out)
    table = columns(
        "data <8 | n × d >14 | kernel evals >13.4g | evals/floor >10.2f× | fit s >8.2f | "
        "GFlop/s >8.2f | of sgemm >8.1f% | shape GFlop/s >13.2f | of shape >8.1f%"
    )
    lines = []
    for r in ours:
        gflops = r["kernel_evals"] * 2 * r["n_features"] / r["fit_s"] / 1e9
        floor = r.get("kernel_floor") or 0
        panel = r.get("panel_gflops")
        lines.append(
            (
                r["data"],
                f"{r['n_train']} × {r['n_features']}",
                r["kernel_evals"],
                r["kernel_evals"] / floor if floor else None,
                r["fit_s"],
                gflops,
                100 * gflops / sgemm_gflops,
                panel if panel else "—",
                100 * gflops / panel if panel else "—",
            )
        )
    print_columns(table, lines, out)


def scaling(peers: list[str], sizes: list[int], out: TextIO) -> dict[str, float]:
    """Fit time on ijcnn1 subsamples; prints the table and the exponent ``k``
    of a least-squares fit ``log t = k log n + c`` per implementation (none
    with fewer than two distinct sizes)."""
    X, y, _, _ = CASES["ijcnn1"].load()
    rng = np.random.default_rng(0)
    times: dict[str, list[float]] = {}
    for n in sizes:
        idx = np.sort(rng.choice(X.shape[0], min(n, X.shape[0]), replace=False))
        for peer in peers:
            est, _ = make_estimator(peer, CASES["ijcnn1"].params)
            if est is None:
                continue
            _, t = timed(lambda e=est, i=idx: e.fit(X[i], y[i]), 1)
            times.setdefault(peer, []).append(t)
    print_columns(
        [Column("n", ">8d")] + [Column(p, ">11.2f", "s") for p in times],
        [(n, *(times[p][k] for p in times)) for k, n in enumerate(sizes)],
        out,
        rule=False,
    )
    if len(set(sizes)) < 2:
        # One size gives no slope: a fitted line through one point is noise.
        print("fitted exponent: needs two sizes or more in --scaling", file=out)
        return {}
    exponents = {p: float(np.polyfit(np.log(sizes), np.log(t), 1)[0]) for p, t in times.items()}
    print(
        "fitted exponent k (time ∝ n^k): "
        + ", ".join(f"{p} {k:.2f}" for p, k in exponents.items()),
        file=out,
    )
    return exponents


_MEMORY_PROBE = """
import json, sys, numpy as np
from localsvm import SVC
name = sys.argv[1]
if name.startswith('gen'):
    from localsvm_benchmarks.data import generated
    X, y = generated(int(name[3:-1]) * 1000)[:2]
else:
    from localsvm.datasets import load_dataset
    d = load_dataset(name)
    X, y = np.ascontiguousarray(d.X_train), d.y_train
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
before = status('VmRSS:')
open('/proc/self/clear_refs', 'w').write('5')  # reset the peak to the current size
SVC(C=1.0, gamma='scale', cache_size=float(sys.argv[2])).fit(X, y)
print(json.dumps({'before': before, 'peak': status('VmHWM:'), 'n': X.shape[0], 'd': X.shape[1]}))
"""


#: The O(n·d) part of the bound: the solver's f64 copy of the rows and its
#: f32 feature-major panel (1.5 × X), plus the predictions' panel of support
#: vectors and per-sample vectors, rounded up to 2 × X.
MEMORY_DATA_COPIES = 2.0
#: The per-example part of the bound, in bytes per training row. At the start
#: of a C-SVC solve the process holds about 225 bytes per row beside the data
#: copies (measured at 200 000 rows, d = 2 to 100): the interpreter's labels,
#: class indices, boxes and row indices (about 40, int64/float64); the core's
#: labels and boxes (16), start and linear term (16), kernel diagonal and
#: signs (12), the rows' squared norms (12, float64 and float32), the cache's
#: per-column heads and LRU links (37), and SMO's state (90: labels, linear
#: term, boxes, alpha, up/low masks, G, Ḡ, pending Ḡ updates, diagonal,
#: order, bound status); 300 leaves room for the batched rounds' result
#: (24) and the cache's swap log (up to 16).
MEMORY_BYTES_PER_ROW = 300.0
#: Allowance for the interpreter and allocator (arenas, thread stacks) and
#: for what a fit with shrinking adds beyond the terms above: 60 to 95 MB was
#: measured (60 000 and 200 000 rows, 20 features, caches of 250 to 2000
#: MB; none of it without shrinking, about 20 MB less with glibc's mmap
#: threshold fixed), not yet accounted for by its allocations.
MEMORY_SLACK_MB = 128.0


def memory(datasets: list[str], cache_sizes: list[float], out: TextIO) -> list[dict]:
    """Peak memory added by ``fit`` (a fresh process per measurement, Linux
    only), against the bound ``cache_size + 2·X + b·n + 128 MB`` where X is
    the training data's size as f64, n its rows and b
    :data:`MEMORY_BYTES_PER_ROW`."""
    if not os.path.exists("/proc/self/clear_refs"):
        print("memory: skipped (needs Linux /proc)", file=out)
        return []
    rows = []
    table = columns(
        "data <8 | cache MB >9.0f | X MB >7.1f | fit peak +MB >13.1f | bound MB >9.1f | within >7"
    )
    lines = []
    for name in datasets:
        for cache in cache_sizes:
            res = subprocess.run(
                [sys.executable, "-c", _MEMORY_PROBE, name, str(cache)],
                capture_output=True,
                text=True,
                check=True,
            )
            m = json.loads(res.stdout)
            x_mb = m["n"] * m["d"] * 8 / 2**20
            extra = (m["peak"] - m["before"]) / 2**20
            rows_mb = MEMORY_BYTES_PER_ROW * m["n"] / 2**20
            bound = cache + MEMORY_DATA_COPIES * x_mb + rows_mb + MEMORY_SLACK_MB
            rows.append(
                {
                    "data": name,
                    "cache_mb": cache,
                    "x_mb": x_mb,
                    "extra_mb": extra,
                    "bound_mb": bound,
                }
            )
            lines.append((name, cache, x_mb, extra, bound, "yes" if extra <= bound else "NO"))
    print_columns(table, lines, out, rule=False)
    return rows


def run_bench(
    datasets: list[str],
    peers: list[str],
    repeat: int = 1,
    scaling_sizes: list[int] | None = None,
    memory_check: bool = True,
    out: TextIO = sys.stdout,
) -> dict:
    """Everything ``python -m localsvm bench`` prints; returns the numbers."""
    from localsvm import _core
    from localsvm.plugins import get_plugin_manager

    get_plugin_manager()  # one-time plugin discovery stays out of the timings
    unknown = [d for d in datasets if d not in CASES]
    if unknown:
        raise ValueError(f"unknown data sets {unknown}; choose from {', '.join(CASES)}")
    print(
        f"localsvm bench: {os.cpu_count()} CPUs, instruction set {_core.simd_level()}, "
        f"tol={COMMON['tol']}, cache_size={COMMON['cache_size']} MB"
        + (
            f" ({_GENERATED['cache_size']} MB on {', '.join(big)})"
            if (big := [d for d in datasets if d in GENERATED_DATASETS])
            else ""
        )
        + f", best of {repeat}",
        file=out,
    )
    # The reference rates are timed before and after the fits, and the
    # better of the two kept: a slowdown of the machine while one of them
    # runs (a few seconds) then does not inflate the kernel arithmetic's
    # share of it.
    sgemm_before = sgemm_rate() if "localsvm" in peers else None
    rows = []
    for name in datasets:
        rows += run_case(CASES[name], peers, repeat, out)
    print(file=out)
    print_table(rows, out)
    print("\nlocalsvm prediction in float64:", file=out)
    print_precision_table(rows, out)
    result: dict = {"rows": rows}
    if any(r["peer"] == "localsvm" for r in rows):
        sgemm_after = sgemm_rate()
        result["sgemm_runs"] = [sgemm_before, sgemm_after]
        result["sgemm_gflops"] = max(sgemm_before or 0.0, sgemm_after)
        print("\nlocalsvm kernel arithmetic during fit:", file=out)
        print_rate_table(rows, result["sgemm_gflops"], out)
    if scaling_sizes:
        print("\nfit time against training-set size (ijcnn1 subsamples):", file=out)
        compared = [p for p in ("localsvm", "sklearn") if p in peers]
        result["exponents"] = scaling(compared, scaling_sizes, out)
    if memory_check:
        print(
            "\nlocalsvm peak memory during fit (bound: cache_size + 2·X + "
            f"{MEMORY_BYTES_PER_ROW:.0f} B·n + {MEMORY_SLACK_MB:.0f} MB):",
            file=out,
        )
        binary = [d for d in datasets if d in BINARY_DATASETS]
        big = [d for d in datasets if d in GENERATED_DATASETS]
        if not (binary or big):
            binary = ["banana"]
        result["memory"] = memory(binary, [50.0, 200.0], out) if binary else []
        if big:
            result["memory"] += memory(big, [float(_GENERATED["cache_size"])], out)
    return result


#: ``bench local``: the numbers of clusters κ of the ProfileSVC rows.
LOCAL_KAPPAS = (4, 16, 64)
#: ``bench local``: the box constraint of every SVM. With C = 10 the global
#: SVC is both more accurate on this split than with ijcnn1's C = 1 (99.17 %
#: against 98.73 % in one run each) and faster to fit.
LOCAL_C = 10.0


def run_local(
    peers: list[str],
    kappas: list[int] | tuple[int, ...] = LOCAL_KAPPAS,
    n_train: int = LOCAL_N_TRAIN,
    n_test: int | None = None,
    out: TextIO | None = None,
) -> list[dict]:
    """``python -m localsvm bench local``: one global RBF SVM against
    ``ProfileSVC(kernel='rbf')`` for each κ, on the ijcnn1 split of
    :func:`local_split`, every model with ``C = 10`` and the same number
    ``gamma`` ('scale' resolved once on the training rows). The profiles use
    the Gaussian similarity of the same width (``bandwidth = 1 / gamma``)
    against the default landmarks. Prints the table and returns its rows."""
    from localsvm import _core
    from localsvm.plugins import get_plugin_manager
    from localsvm.profile_svc import ProfileSVC

    out = sys.stdout if out is None else out
    get_plugin_manager()
    X, y, Xt, yt = local_split(n_train, n_test)
    gamma = resolve_gamma("scale", X)
    params = {"C": LOCAL_C, "gamma": gamma}
    print(
        f"localsvm bench local: ijcnn1, {X.shape[0]} train / {Xt.shape[0]} test, RBF, "
        f"C={LOCAL_C:g}, gamma={gamma:.6g} ('scale' on the training rows), tol={COMMON['tol']}, "
        f"cache_size={COMMON['cache_size']} MB; {os.cpu_count()} CPUs, "
        f"instruction set {_core.simd_level()}",
        file=out,
        flush=True,
    )
    models: list[tuple[str, str, Any]] = []
    for peer in ["localsvm"] + [p for p in peers if p != "localsvm"]:
        est, why = make_estimator(peer, params)
        if est is None:
            print(f"  skipping {peer}: {why}", file=out)
            continue
        models.append((f"{peer} SVC", "", est))
        if peer == "localsvm":
            for kappa in kappas:
                if kappa > X.shape[0]:
                    print(f"  skipping κ={kappa}: more than {X.shape[0]} examples", file=out)
                    continue
                profile = ProfileSVC(
                    n_clusters=kappa,
                    bandwidth=1.0 / gamma,
                    random_state=0,
                    **params,
                    **COMMON,
                )
                models.append(("localsvm ProfileSVC", str(kappa), profile))
    rows = []
    for name, kappa, est in models:
        _, fit_s = timed(lambda e=est: e.fit(X, y))
        pred, pred_s = timed(lambda e=est: e.predict(Xt))
        if hasattr(est, "cluster_models_"):
            n_sv = sum(0 if m is None else m.support_.size for m in est.cluster_models_)
            clustering = est.timings_["similarity"] + est.timings_["clustering"]
        else:
            n_sv = len(getattr(est, "support_", []))
            clustering = float("nan")
        rows.append(
            {
                "model": name,
                "kappa": kappa,
                "fit_s": fit_s,
                "predict_s": pred_s,
                "clustering_s": clustering,
                "accuracy": float(np.mean(pred == yt)),
                "n_sv": int(n_sv),
            }
        )
        print(f"  {name} {kappa}: fit {fit_s:.2f} s, predict {pred_s:.2f} s", file=out, flush=True)
    print(file=out)
    table = columns(
        "model <20 | κ >3 | fit s >8.2f | (clust. s) >10.2f | predict s >10.2f | "
        "total s >8.2f | accuracy >8.2f% | SVs >6d | time / SVC >10.2f× | Δacc pt >+8.2f"
    )
    base = rows[0]
    base_total = base["fit_s"] + base["predict_s"]
    lines = []
    for r in rows:
        total = r["fit_s"] + r["predict_s"]
        lines.append(
            (
                r["model"],
                r["kappa"],
                r["fit_s"],
                None if np.isnan(r["clustering_s"]) else r["clustering_s"],
                r["predict_s"],
                total,
                100 * r["accuracy"],
                r["n_sv"],
                total / base_total,
                100 * (r["accuracy"] - base["accuracy"]),
            )
        )
    print_columns(table, lines, out)
    print(
        "time / SVC: fit + predict over localsvm SVC's; Δacc pt: accuracy minus localsvm "
        "SVC's, in points; clust. s: the similarity profiles and the clustering, part of fit",
        file=out,
    )
    return rows
