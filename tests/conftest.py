"""Shared fixtures and helpers for the localsvm test suite."""

from __future__ import annotations

import contextlib
import io
import math
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from localsvm._objective import binary_dual_objective
from localsvm.datasets import load_banana
from localsvm.kernels import KernelSpec


def png_width(path) -> int:
    """The pixel width in a PNG file's header (the IHDR chunk)."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG file"
    return int.from_bytes(head[16:20], "big")


def sklearn_binary_objective(model, X_train: np.ndarray) -> float:
    """The dual objective of a fitted two-class scikit-learn ``SVC``, by the
    library's own formula (the same one that compares models in ``bench``)."""
    spec = KernelSpec(model.kernel, gamma=model._gamma, coef0=model.coef0, degree=model.degree)
    return binary_dual_objective(spec, X_train[model.support_], model.dual_coef_[0])


@pytest.fixture(scope="session", autouse=True)
def _ctrl_c_reaches_python():
    """Python's Ctrl-C handler during the run. A run started as a background
    job of a non-interactive shell inherits SIGINT ignored, and Python then
    installs no handler: the tests that send SIGINT (or call
    ``_thread.interrupt_main``) would see nothing happen."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


@pytest.fixture(scope="session")
def banana():
    return load_banana(0)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def memmap_copy(X: np.ndarray) -> np.memmap:
    """``X`` copied into a read-only NumPy memmap in a fresh temporary
    folder: the input ``CellSVC`` reads in chunks."""
    import os
    import tempfile

    path = os.path.join(tempfile.mkdtemp(), "X.f64")
    mm = np.memmap(path, dtype=X.dtype, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    return np.memmap(path, dtype=X.dtype, mode="r", shape=X.shape)


def make_problem_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes, labels ±1."""
    r = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = r.normal(size=(n, d)) + 0.8 * y[:, None] * np.linspace(1.0, 0.2, d)
    return X, y


def run_reproduce(name: str, *argv: str) -> tuple[str, list[dict]]:
    """Run ``python -m localsvm reproduce NAME ARGV`` in process; return its
    printed text and the rows its ``run`` returned."""
    from localsvm_experiments import load

    from localsvm.__main__ import main

    mod = load(name)
    captured: list[list[dict]] = []
    run = mod.run

    def spy(args, out):
        rows = run(args, out)
        captured.append(rows)
        return rows

    buf = io.StringIO()
    mod.run = spy
    try:
        with contextlib.redirect_stdout(buf):
            assert main(["reproduce", name, *argv]) == 0
    finally:
        mod.run = run
    return buf.getvalue(), captured[0]


_CHILD = r"""
import json, resource, sys

limit = int(sys.argv[1])
if limit > 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
out = {"error": None, "message": "", "value": None}
scope = {}
try:
    exec(compile(sys.stdin.read(), "<child>", "exec"), scope)
    out["value"] = scope.get("RESULT")
except BaseException as err:  # reported to the parent, whatever it is
    out["error"] = type(err).__name__
    out["message"] = str(err)
with open("/proc/self/status") as fh:
    for line in fh:
        if line.startswith("VmHWM:"):
            out["peak_mib"] = int(line.split()[1]) / 1024
print("CHILD-RESULT " + json.dumps(out))
"""


#: The saved command outputs that the documentation pages include.
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "results"


def saved_output(name: str) -> str:
    """``docs/results/NAME.txt`` below its two header lines (the command, then
    when it ran), as ``docs/results/generate.py`` saved it."""
    lines = (RESULTS / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("$ ") and lines[1].startswith("# ran "), name
    return "\n".join(lines[2:])


def saved_figures(names: list[str], pattern: str, key: str) -> dict[str, tuple[float, float]]:
    """The figures of saved full runs: every line of ``docs/results/NAME.txt``
    (for each of ``names``) that matches the regular expression ``pattern``
    gives ``{key.format(**groups): (mean, std)}``, from its groups ``mean``
    and ``std`` (0 where the pattern has no ``std``). A row seen twice is an
    error: each figure has one source."""
    import re

    rx = re.compile(pattern)
    out: dict[str, tuple[float, float]] = {}
    for name in names:
        for line in saved_output(name).splitlines():
            m = rx.match(line)
            if not m:
                continue
            k = key.format(**m.groupdict())
            assert k not in out, f"{k} appears twice in {names}"
            std = m.groupdict().get("std")
            out[k] = (float(m["mean"]), float(std) if std else 0.0)
    assert out, f"no line of {names} matches {pattern!r}"
    return out


@dataclass(frozen=True)
class FullRunFigure:
    """One figure of a reproduction's full run, as its saved output prints it, and
    what the quick protocol printed for the same row.

    ``full`` and ``full_std`` are the full run's mean and sample standard
    deviation over its splits (0 when it had one split); ``quick`` is the
    figure the stored ``--quick`` run printed; ``n_test`` is the quick
    protocol's test (or validation) set size and ``repeats`` its number of
    splits. All in percent.
    """

    full: float
    full_std: float
    quick: float
    n_test: int
    repeats: int = 1

    def tolerance(self) -> float:
        """How far a quick-protocol figure may lie from the full run's.

        The quick protocol trains on fewer examples with smaller grids, so
        its figure differs from the full run's by a systematic gap, which the
        stored quick run measured (``|quick - full|``), plus the noise of one
        quick figure. That noise is taken as three standard errors of a mean
        over ``repeats`` splits whose spread is the full run's split-to-split
        spread plus the binomial spread of an accuracy on ``n_test``
        examples: ``sqrt((full_std² + p(1 - p)·100² / n_test) / repeats)``,
        with ``p`` the full run's figure as a fraction. The binomial term
        counts test-set noise that ``full_std`` already holds, so the
        estimate errs on the wide side; three standard errors cover a normal
        deviate 99.7 % of the time.
        """
        p = min(max(self.full / 100.0, 0.0), 1.0)
        se = math.sqrt((self.full_std**2 + p * (1.0 - p) * 1e4 / self.n_test) / self.repeats)
        return abs(self.quick - self.full) + 3.0 * se


def off_the_full_run(got: dict[str, float], expected: dict[str, FullRunFigure]) -> dict:
    """The rows of ``got`` (a quick run's figures, in percent) that lie
    further from the full run's figure than :meth:`FullRunFigure.tolerance`
    allows: ``{row: (ours, full run's, tolerance)}``; empty when all agree.
    A row missing from either side is reported too."""
    if got.keys() != expected.keys():
        return {"rows": (sorted(got), sorted(expected))}
    off = {}
    for key, e in expected.items():
        tol = e.tolerance()
        if not abs(got[key] - e.full) <= tol:
            off[key] = (round(got[key], 2), e.full, round(tol, 2))
    return off


def run_in_child(code: str, *, address_limit: int = 0, timeout: float = 600) -> dict:
    """Run ``code`` in a fresh interpreter, under ``RLIMIT_AS = address_limit``
    bytes when positive (a smaller machine, without exhausting this one).

    Returns a dict: ``returncode`` (negative: killed by that signal, e.g. an
    abort), ``error`` and ``message`` (the exception ``code`` raised, if any),
    ``value`` (what ``code`` left in ``RESULT``), ``peak_mib`` (the child's
    peak resident memory, ``VmHWM``) and ``stderr``.
    """
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    import localsvm

    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(localsvm.__file__).resolve().parents[1])
    # One BLAS thread: each one reserves address space the limit would count.
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(int(address_limit))],
        input=code,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    result = {"returncode": proc.returncode, "stderr": proc.stderr[-2000:], "error": None}
    for line in proc.stdout.splitlines():
        if line.startswith("CHILD-RESULT "):
            result.update(json.loads(line[len("CHILD-RESULT ") :]))
    return result


def runs_detached(call, max_calls: int = 50) -> bool:
    """Whether ``call()`` (a compiled-core call) lets another Python thread
    run while it executes, i.e. releases the GIL. No clock is read.

    With a switch interval far longer than the test, a thread holding the
    GIL keeps it until it blocks or releases it itself. ``call`` runs on a
    worker thread, up to ``max_calls`` times, until the main thread (woken
    once the worker is about to call) gets the GIL and sets ``ran``; the
    worker checks ``ran`` only between its own calls, so if the calls held
    the GIL the main thread could not run before the worker ends, and the
    answer is False."""
    import sys
    import threading

    about_to_call, ran = threading.Event(), threading.Event()
    seen: list[bool] = []

    def worker():
        about_to_call.set()
        for _ in range(max_calls):
            call()
            if ran.is_set():
                seen.append(True)
                return
        seen.append(False)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        thread = threading.Thread(target=worker)
        thread.start()
        about_to_call.wait()
        ran.set()
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    return seen == [True]
