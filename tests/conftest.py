"""Shared fixtures and helpers for the localsvm test suite."""

from __future__ import annotations

import contextlib
import io

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


@pytest.fixture(scope="session")
def banana():
    return load_banana(0)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def make_problem_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes, labels ±1."""
    r = np.random.default_rng(seed)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    X = r.normal(size=(n, d)) + 0.8 * y[:, None] * np.linspace(1.0, 0.2, d)
    return X, y


def run_reproduce(name: str, *argv: str) -> tuple[str, list[dict]]:
    """Run ``python -m localsvm reproduce NAME ARGV`` in process; return its
    printed text and the rows its ``run`` returned."""
    from localsvm.__main__ import main
    from localsvm.experiments import load

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
