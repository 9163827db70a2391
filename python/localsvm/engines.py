"""The execution-engine interface and the built-in engines.

An engine runs a batch of independent tasks (:func:`localsvm.run_tasks`
hands it one). This module defines the interface, :class:`Engine`, and the
built-ins, ``"serial"``, ``"threads"`` and ``"joblib"``, which register themselves
through the ``localsvm_register_engines`` hook. It imports nothing from the
plugin manager, so a third-party engine can build on it freely.

>>> ThreadEngine().map(abs, [-1, 2, -3], n_jobs=2)
[1, 2, 3]
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from ._docstrings import fill
from .hookspecs import register_builtins

__all__ = ["Engine", "JoblibEngine", "SerialEngine", "ThreadEngine", "interrupt_running"]


#: Calls of :func:`interrupt_running` so far. A long Python loop in a worker
#: thread (which the signal never reaches) notes it when its batch starts and
#: stops once it has changed (:func:`interrupt_count`).
_interrupts = 0


def interrupt_count() -> int:
    """How many times :func:`interrupt_running` has been called in this
    process: a worker's Python loop that saw one value at its start raises
    ``KeyboardInterrupt`` once the count differs (see :func:`interrupt_epoch`)."""
    return _interrupts


def interrupt_epoch() -> tuple[int, int]:
    """This process and its :func:`interrupt_count`: what a batch notes when
    it starts, for :func:`interrupted_since`."""
    return (os.getpid(), _interrupts)


def interrupted_since(epoch: tuple[int, int] | None) -> bool:
    """Whether :func:`interrupt_running` was called since ``epoch`` was
    noted. Only in the process that noted it: a task shipped to another
    process (a Dask worker) carries the count of the process that sent it,
    which says nothing about its own."""
    return epoch is not None and epoch[0] == os.getpid() and _interrupts != epoch[1]


def interrupt_running() -> None:
    """Stop every Rust solve, kernel build and prediction running now.

    Signals reach only the main thread, so a Rust call running in a worker
    thread cannot see Ctrl-C by itself: the thread that receives the
    ``KeyboardInterrupt`` calls this, and each such call returns
    ``KeyboardInterrupt`` in its worker soon after. Calls started later are
    not affected. A no-op when the compiled core is not available (but the
    count of :func:`interrupt_count` still moves).
    """
    global _interrupts
    _interrupts += 1
    try:
        from ._core import interrupt_all
    except ImportError:  # pragma: no cover - the pure-Python install
        return
    interrupt_all()


#: The parameters every engine's ``map`` takes.
_MAP_PARAMS = """\
Parameters
----------
fn : callable
    Called once per task.
tasks : sequence
    The tasks.
n_jobs : int
    Workers to use at most (already resolved, ≥ 1)."""


@runtime_checkable
@fill(map_params=_MAP_PARAMS)
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

        {map_params}

        Returns
        -------
        list
            ``fn(t)`` for each task, in task order.
        """
        ...


_NOTHING = object()


@fill(map_params=_MAP_PARAMS)
class _BuiltinEngine:
    """The built-in engines' ``map``: each task's arguments, ``(task,)`` or
    ``(task, shared)``, go to ``_run``, which calls ``fn`` on them (shared
    data is passed as an argument, never bound into a closure, so that
    joblib can memory-map it for its processes)."""

    accepts_shared = True

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *,
        n_jobs: int,
        shared: Any = _NOTHING,
    ) -> list[Any]:
        """Compute ``[fn(t) for t in tasks]``, or ``fn(t, shared)`` with ``shared``.

        {map_params}
        shared : object, optional
            Data every task reads, passed to ``fn`` as its second argument.

        Returns
        -------
        list
            The results, in task order.
        """
        args = [(t,) if shared is _NOTHING else (t, shared) for t in tasks]
        return self._run(fn, args, n_jobs)

    def _run(self, fn: Callable[..., Any], args: list[tuple], n_jobs: int) -> list[Any]:
        raise NotImplementedError  # pragma: no cover - each engine defines it


class SerialEngine(_BuiltinEngine):
    """Runs the tasks one after another in the calling thread."""

    name = "serial"

    def _run(self, fn, args, n_jobs):
        return [fn(*a) for a in args]


class ThreadEngine(_BuiltinEngine):
    """Runs the tasks on ``n_jobs`` threads; shared data is not copied.

    When the waiting thread is interrupted (Ctrl-C), the tasks not started
    are dropped, the Rust calls running in the workers are stopped
    (:func:`interrupt_running`), the workers are waited for, and the
    ``KeyboardInterrupt`` propagates. When a task raises, the tasks not
    started are dropped, the running ones finish, and the error of the
    first failed task (in task order) propagates. No thread outlives the
    call.
    """

    name = "threads"

    def _run(self, fn, args, n_jobs):
        workers = max(1, min(n_jobs, len(args)))
        if workers == 1:
            return [fn(*a) for a in args]
        results: list[Any] = [None] * len(args)
        errors: dict[int, BaseException] = {}
        pending = queue.SimpleQueue()
        for i in range(len(args)):
            pending.put(i)
        stop = threading.Event()

        def work() -> None:
            while not stop.is_set():
                try:
                    i = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    results[i] = fn(*args[i])
                except BaseException as exc:  # handed to the waiting thread
                    errors[i] = exc
                    stop.set()

        # Each thread is listed before it starts, so every started thread is
        # waited for even when the interrupt lands while they are started.
        threads: list[threading.Thread] = []
        try:
            for k in range(workers):
                t = threading.Thread(target=work, name=f"localsvm_{k}")
                threads.append(t)
                t.start()
            for t in threads:
                t.join()
        except KeyboardInterrupt:
            stop.set()
            interrupt_running()
            for t in threads:
                if t.ident is not None:
                    t.join()
            raise
        if errors:
            raise errors[min(errors)]
        return results


class JoblibEngine(_BuiltinEngine):
    """Runs the tasks through :class:`joblib.Parallel`, under the caller's
    joblib configuration.

    Inside ``joblib.parallel_config(backend=...)`` (or
    ``parallel_backend``) the batch runs on that backend: ``"threading"``,
    ``"loky"`` processes, a Dask cluster (``backend="dask"``), or any backend
    a library registered with joblib. Without one, joblib's threads are
    used (``prefer="threads"``: the Rust solves release the GIL). Shared data
    is passed with every task; joblib memory-maps large arrays for
    processes, and its Dask backend scatters large arguments once per call.
    Progress hooks are reported after the batch (the tasks may run
    elsewhere); Ctrl-C stops the Rust calls running in this process's
    threads (:func:`interrupt_running`).
    """

    name = "joblib"
    in_process = False

    def _run(self, fn, args, n_jobs):
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=max(1, n_jobs), prefer="threads")
        return list(parallel(delayed(fn)(*a) for a in args))


def joblib_backend_chosen() -> bool:
    """Whether the caller runs inside a joblib configuration that names a
    backend other than joblib's default, process-based ``"loky"``
    (``parallel_config(backend="threading" | "dask" | ...)``): then
    :func:`localsvm.run_tasks` uses it by default. ``"loky"`` itself cannot
    be told apart from joblib's default, so it is not taken by default (the
    Rust solves release the GIL, and threads share the data without copies);
    ``use_engine("joblib")`` takes it.
    """
    try:
        from joblib.parallel import BACKENDS, get_active_backend
    except ImportError:  # pragma: no cover - joblib comes with scikit-learn
        return False
    backend, _ = get_active_backend()
    return not isinstance(backend, BACKENDS["loky"])


localsvm_register_engines = register_builtins(
    "localsvm_register_engines", SerialEngine, ThreadEngine, JoblibEngine
)
