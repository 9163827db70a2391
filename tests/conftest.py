"""Shared fixtures and helpers for the localsvm test suite."""

from __future__ import annotations

import numpy as np
import pytest

from localsvm.datasets import load_banana
from localsvm.kernels import KernelSpec, kernel_matrix_numpy


def dual_objective(spec: KernelSpec, support_vectors: np.ndarray, coef: np.ndarray) -> float:
    """½ cᵀKc − Σ|c| for one binary model given its coefficients c = y·α."""
    K = kernel_matrix_numpy(spec, support_vectors, support_vectors)
    return float(0.5 * coef @ K @ coef - np.abs(coef).sum())


def sklearn_binary_objective(model, X_train: np.ndarray) -> float:
    """The dual objective of a fitted two-class scikit-learn ``SVC``."""
    spec = KernelSpec(model.kernel, gamma=model._gamma, coef0=model.coef0, degree=model.degree)
    return dual_objective(spec, X_train[model.support_], model.dual_coef_[0])


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
