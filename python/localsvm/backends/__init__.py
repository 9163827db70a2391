"""Solver backends: the interface (:mod:`.base`), the built-in backends
(:mod:`.rust`, :mod:`.scipy_qp`) and helpers for dense ones (:mod:`.dense`).

Pick one by name with :func:`localsvm.get_backend`, or let
:func:`localsvm.select_backend` choose (``"auto"``).
"""

from .base import (
    Capabilities,
    QPProblem,
    QPSolution,
    SolverBackend,
    UnsupportedProblemError,
    check_capabilities,
)
from .select import select_backend

__all__ = [
    "Capabilities",
    "QPProblem",
    "QPSolution",
    "SolverBackend",
    "UnsupportedProblemError",
    "check_capabilities",
    "select_backend",
]
