"""Choosing the backend that solves a problem (``backend="auto"`` or a name)."""

from __future__ import annotations

from ..plugins import backends, get_backend
from .base import QPProblem, SolverBackend, UnsupportedProblemError


def select_backend(name: str, problem: QPProblem, needs: tuple[str, ...] = ()) -> SolverBackend:
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
    needs : tuple of str, default=()
        :class:`Capabilities` flags the caller needs besides what ``problem``
        uses (``'online'``: the estimator learns through
        ``online_learner``). ``"auto"`` considers only the backends that have
        them; a named backend without them is refused, and the message lists
        the backends that have them.

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
            reason = _lacks(cand, needs) or cand.check(problem)
            if reason is None:
                return cand
            reasons[cand.name] = reason
        detail = "; ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "none registered"
        raise UnsupportedProblemError(f"no registered backend can solve this problem ({detail})")
    backend = get_backend(name)
    reason = _lacks(backend, needs)
    if reason is not None:
        able = [b.name for b in backends().values() if _lacks(b, needs) is None]
        listed = ", ".join(repr(n) for n in sorted(able)) or "none is registered"
        raise UnsupportedProblemError(
            f"backend {name!r} cannot be used here: {reason}; backends that can: {listed}"
        )
    reason = backend.check(problem)
    if reason is not None:
        raise UnsupportedProblemError(f"backend {name!r} cannot solve this problem: {reason}")
    return backend


#: What each capability a caller may need lets a backend do, for messages.
_NEEDS = {"online": "provide an online learner (capabilities.online)"}


def _lacks(backend: SolverBackend, needs: tuple[str, ...]) -> str | None:
    """The first of ``needs`` that ``backend``'s capabilities lack, as a
    sentence; None when it has them all."""
    caps = getattr(backend, "capabilities", None)
    for flag in needs:
        if not getattr(caps, flag, False):
            return f"it does not {_NEEDS.get(flag, f'declare capabilities.{flag}')}"
    return None
