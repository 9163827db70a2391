"""Choosing the backend that solves a problem (``backend="auto"`` or a name)."""

from __future__ import annotations

from ..plugins import backends, get_backend
from .base import QPProblem, SolverBackend, UnsupportedProblemError


def select_backend(name: str, problem: QPProblem) -> SolverBackend:
    """Choose the backend that will solve ``problem``.

    Parameters
    ----------
    name : str
        ``"auto"``: among the registered backends whose ``check`` accepts the
        problem, the one with the highest ``priority`` (ties broken by name);
        with the built-ins that is ``rust`` for every problem. Any other name
        must be registered, and that backend must accept the problem.
    problem : QPProblem
        The problem to solve.

    Returns
    -------
    SolverBackend
        The chosen backend.

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the names).
    UnsupportedProblemError
        A ``ValueError`` subclass: the named backend declined the problem, or
        none accepts it under ``"auto"``; the message says why.

    Examples
    --------
    >>> import numpy as np
    >>> from localsvm import QPProblem, select_backend
    >>> problem = QPProblem(X=np.eye(2), y=np.array([1.0, -1.0]), upper=np.ones(2))
    >>> select_backend("auto", problem).name
    'rust'
    >>> select_backend("scipy", problem).name
    'scipy'
    """
    if not isinstance(name, str):
        raise ValueError(f"backend must be a string, got {name!r}")
    if name == "auto":
        items = backends()
        reasons = {}
        for cand in sorted(items.values(), key=lambda b: (-int(b.priority), b.name)):
            reason = cand.check(problem)
            if reason is None:
                return cand
            reasons[cand.name] = reason
        detail = "; ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "none registered"
        raise UnsupportedProblemError(f"no registered backend can solve this problem ({detail})")
    backend = get_backend(name)
    reason = backend.check(problem)
    if reason is not None:
        raise UnsupportedProblemError(f"backend {name!r} cannot solve this problem: {reason}")
    return backend
