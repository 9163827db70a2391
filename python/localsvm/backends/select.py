"""Choosing the backend that solves a problem (``backend="auto"`` or a name)."""

from __future__ import annotations

from ..plugins import backends, get_backend
from .base import QPProblem, SolverBackend, UnsupportedProblemError


def select_backend(name: str, problem: QPProblem) -> SolverBackend:
    """The backend that will solve ``problem``.

    ``name="auto"``: among the registered backends whose ``check`` accepts the
    problem, the one with the highest ``priority`` (ties broken by name). With
    the built-ins that is ``rust`` for every problem. Any other name must be
    registered (else ``ValueError`` listing the names), and that backend must
    accept the problem (else :class:`~localsvm.backends.UnsupportedProblemError`,
    a ``ValueError``, saying why it declined).
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
