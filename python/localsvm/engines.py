"""The execution-engine interface and the built-in engines.

An engine runs a batch of independent tasks (:func:`localsvm.run_tasks`
hands it one). This module defines the interface, :class:`Engine`, and the
two built-ins, ``"serial"`` and ``"threads"``, which register themselves
through the ``localsvm_register_engines`` hook. It imports nothing from the
plugin manager, so a third-party engine can build on it freely.

>>> ThreadEngine().map(abs, [-1, 2, -3], n_jobs=2)
[1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from .hookspecs import hookimpl

__all__ = ["Engine", "SerialEngine", "ThreadEngine"]


@runtime_checkable
class Engine(Protocol):
    """The interface of an execution engine.

    An engine runs ``fn`` over ``tasks`` and returns the results in task
    order. Two optional class attributes refine how :func:`run_tasks`
    calls it: ``accepts_shared`` (default False) says that ``map`` takes a
    ``shared`` keyword (data that every task reads, passed to ``fn`` as its
    second argument) and can ship it to workers once per batch; otherwise
    ``run_tasks`` binds it into ``fn``. ``in_process`` (default True) says
    the engine runs tasks on this machine's cores, so a batch with one job
    runs inline; an engine with ``in_process = False`` (a cluster) receives
    every batch and decides its own parallelism.

    Attributes
    ----------
    name : str
        The name passed as ``engine=...`` or to :func:`use_engine`.
    """

    name: str

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *, n_jobs: int) -> list[Any]:
        """Compute ``[fn(t) for t in tasks]``, possibly in parallel.

        Parameters
        ----------
        fn : callable
            Called once per task.
        tasks : sequence
            The tasks.
        n_jobs : int
            Workers to use at most (already resolved, ≥ 1).

        Returns
        -------
        list
            ``fn(t)`` for each task, in task order.
        """
        ...


_NOTHING = object()


def _bind(fn: Callable[..., Any], shared: Any) -> Callable[[Any], Any]:
    """``fn`` itself, or ``task -> fn(task, shared)`` when data is shared."""
    if shared is _NOTHING:
        return fn
    return lambda task: fn(task, shared)


class SerialEngine:
    """Runs the tasks one after another in the calling thread."""

    name = "serial"
    accepts_shared = True

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *,
        n_jobs: int,
        shared: Any = _NOTHING,
    ) -> list[Any]:
        call = _bind(fn, shared)
        return [call(t) for t in tasks]


class ThreadEngine:
    """Runs the tasks on a pool of ``n_jobs`` threads; shared data is not copied."""

    name = "threads"
    accepts_shared = True

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *,
        n_jobs: int,
        shared: Any = _NOTHING,
    ) -> list[Any]:
        call = _bind(fn, shared)
        workers = max(1, min(n_jobs, len(tasks)))
        if workers == 1:
            return [call(t) for t in tasks]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="localsvm") as pool:
            return list(pool.map(call, tasks))


@hookimpl
def localsvm_register_engines(register):
    """Register the built-in engines.

    Parameters
    ----------
    register : callable
        Called once per engine; it rejects a name that is already taken.
    """
    register(SerialEngine())
    register(ThreadEngine())
