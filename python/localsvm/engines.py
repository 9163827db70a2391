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
    order.

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


class SerialEngine:
    """Runs the tasks one after another in the calling thread."""

    name = "serial"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *, n_jobs: int) -> list[Any]:
        return [fn(t) for t in tasks]


class ThreadEngine:
    """Runs the tasks on a pool of ``n_jobs`` threads."""

    name = "threads"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any], *, n_jobs: int) -> list[Any]:
        workers = max(1, min(n_jobs, len(tasks)))
        if workers == 1:
            return [fn(t) for t in tasks]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="localsvm") as pool:
            return list(pool.map(fn, tasks))


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
