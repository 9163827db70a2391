"""One place through which every batch of independent work runs.

Estimators hand independent pieces of work — one QP per class pair, per
class, per cluster, per test example — to :func:`run_tasks`, which passes them
to an *engine*. Built-in engines: ``"threads"`` (a thread pool; the Rust
solvers release the GIL, so threads run truly in parallel), ``"serial"`` and
``"joblib"`` (:class:`joblib.Parallel` under the caller's joblib
configuration). A scikit-learn user's ``with
joblib.parallel_config(backend="threading" | "dask" | ...):`` therefore
applies unchanged: inside such a block the default engine is ``"joblib"``.
Other engines (a Dask or Ray cluster, say) plug in through the
``localsvm_register_engines`` hook and are chosen with
:func:`set_default_engine`, the :func:`use_engine` context manager, or the
``LOCALSVM_ENGINE`` environment variable.

>>> run_tasks(lambda t: t * t, [1, 2, 3])
[1, 4, 9]
>>> with use_engine("serial"):
...     run_tasks(str, [1, 2])
['1', '2']
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ._docstrings import fill
from .engines import (
    Engine,
    JoblibEngine,
    SerialEngine,
    ThreadEngine,
    interrupt_running,
    joblib_backend_chosen,
)
from .plugins import get_engine

__all__ = [
    "Engine",
    "JoblibEngine",
    "SerialEngine",
    "ThreadEngine",
    "effective_n_jobs",
    "get_default_engine",
    "interrupt_running",
    "one_blas_thread",
    "run_tasks",
    "set_default_engine",
    "use_engine",
]

T = TypeVar("T")
R = TypeVar("R")

ENGINE_ENV = "LOCALSVM_ENGINE"
#: The built-in engines, which run tasks in this process.
_IN_PROCESS = frozenset({"threads", "serial"})


_state = threading.local()
_default_lock = threading.Lock()
_default_engine: str | None = None


#: The ``Raises`` section of the functions that take an engine's name.
_RAISES_UNKNOWN_ENGINE = """\
Raises
------
ValueError
    If no engine is registered under ``name``."""


def get_default_engine() -> str:
    """Return the engine :func:`run_tasks` uses when none is named.

    Returns
    -------
    str
        The innermost :func:`use_engine`, else :func:`set_default_engine`,
        else ``$LOCALSVM_ENGINE``, else ``"joblib"`` inside a
        ``joblib.parallel_config`` that names a backend other than joblib's
        default ``"loky"``, else ``"threads"``.
    """
    stack = getattr(_state, "stack", None)
    if stack:
        return stack[-1]
    if _default_engine is not None:
        return _default_engine
    chosen = os.environ.get(ENGINE_ENV)
    if chosen:
        return chosen
    return "joblib" if joblib_backend_chosen() else "threads"


@fill(raises_unknown_engine=_RAISES_UNKNOWN_ENGINE)
def set_default_engine(name: str | None) -> None:
    """Set (or with ``None`` clear) the process-wide default engine.

    A :func:`use_engine` block still takes precedence in its thread.

    Parameters
    ----------
    name : str or None
        A name from :func:`localsvm.list_engines`, or None to fall back to
        ``$LOCALSVM_ENGINE`` and then ``"threads"``.

    {raises_unknown_engine}

    Examples
    --------
    >>> from localsvm import run_tasks, set_default_engine
    >>> set_default_engine("serial")
    >>> run_tasks(abs, [-1, -2])
    [1, 2]
    >>> set_default_engine(None)
    """
    global _default_engine
    if name is not None:
        get_engine(name)  # fail early on an unknown name
    with _default_lock:
        _default_engine = name


@contextmanager
@fill(raises_unknown_engine=_RAISES_UNKNOWN_ENGINE)
def use_engine(name: str) -> Iterator[None]:
    """Use engine ``name`` for :func:`run_tasks` calls in this thread, within the block.

    Blocks nest; the innermost wins, and the previous engine is restored on
    leaving the block.

    Parameters
    ----------
    name : str
        A name from :func:`localsvm.list_engines`.

    Yields
    ------
    None
        Control, for the body of the ``with`` block.

    {raises_unknown_engine}

    Examples
    --------
    >>> from localsvm import run_tasks, use_engine
    >>> with use_engine("serial"):
    ...     run_tasks(len, ["a", "bc"])
    [1, 2]
    """
    get_engine(name)
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


_blas_lock = threading.Lock()
_blas_holders = 0
_blas_limiter = None


def _release_blas_control() -> None:
    """Let the next thread that sets a limit set it: threadpoolctl lets only
    one thread (the first that set a limit, until released) change the
    process-wide thread count of a pthreads OpenBLAS, and silently ignores
    the others."""
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with the BLAS libraries limited to one thread.

    The limit (threadpoolctl's) is process-wide, and OpenBLAS rounds its
    products and factorisations differently on 1 and 2 threads (by 1e-13 on
    a product, up to 1e-10 on ClusterSVC's hyperplanes), so one ``with
    threadpool_limits(1)`` per fit is not enough when fits run in several
    threads at once: the first to leave restores the original thread count
    while the others still compute, and a thread other than the one that
    first set a limit cannot set one at all (threadpoolctl ignores it). Here
    the blocks of every thread share one limit, set when the first block
    begins and restored when the last one ends, whichever threads these
    are. A result computed inside therefore does not depend on what else
    the process runs.

    >>> with one_blas_thread():
    ...     pass
    """
    global _blas_holders, _blas_limiter
    from threadpoolctl import threadpool_limits

    with _blas_lock:
        if _blas_holders == 0:
            _release_blas_control()
            _blas_limiter = threadpool_limits(1, user_api="blas")
        _blas_holders += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_holders -= 1
            if _blas_holders == 0 and _blas_limiter is not None:
                _release_blas_control()
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
                _release_blas_control()


def effective_n_jobs(n_jobs: int | None) -> int:
    """Resolve ``n_jobs`` to a number of workers.

    Parameters
    ----------
    n_jobs : int or None
        ``None`` or ``-1``: all CPUs; ``-k``: all but ``k − 1``; ``k > 0``:
        ``k``. 0 is an error.

    Returns
    -------
    int
        The number of workers, at least 1.
    """
    if n_jobs is not None and n_jobs > 0:
        return int(n_jobs)  # without counting the CPUs (a read of the system's list)
    if n_jobs == 0:
        raise ValueError("n_jobs must not be 0")
    cpus = os.cpu_count() or 1
    if n_jobs is None:
        return cpus
    return max(1, cpus + 1 + n_jobs)


def run_tasks(
    fn: Callable[..., R],
    tasks: Iterable[T],
    *,
    n_jobs: int | None = None,
    engine: str | None = None,
    thread_safe: bool = True,
    shared: Any = None,
    on_start: Callable[[int], Any] | None = None,
    on_done: Callable[[int, Any], Any] | None = None,
) -> list[R]:
    """Apply ``fn`` to every task through an engine; results in task order.

    With one task, or one job on an engine that runs on this machine, the
    tasks run in the calling thread.

    Ctrl-C stops the whole batch: Rust solves running in the calling thread
    see the signal themselves; with the ``"threads"`` engine the pending
    tasks are cancelled, the Rust calls running in the workers are stopped,
    the workers are waited for, and ``KeyboardInterrupt`` is raised.

    Parameters
    ----------
    fn : callable
        Called once per task: ``fn(task)``, or ``fn(task, shared)`` when
        ``shared`` is given. For engines that run tasks in other processes
        (``"dask"``) it must be picklable: a module-level function is best.
    tasks : iterable
        The independent pieces of work: small, picklable values (indices,
        row subsets, labels); large inputs belong in ``shared``.
    n_jobs : int or None, default=None
        Workers: None or -1 for all CPUs, ``-k`` for all but ``k − 1``.
    engine : str or None, default=None
        A registered engine; None uses the default (:func:`use_engine`,
        :func:`set_default_engine`, ``$LOCALSVM_ENGINE``, else
        ``"threads"``).
    thread_safe : bool, default=True
        False keeps the thread-based engine from running the tasks
        concurrently (for backends that are not re-entrant).
    shared : object, default=None
        Data every task reads (the training matrix, a Gram matrix, σ
        blocks, the backend): passed to ``fn`` as its second argument.
        In-process engines pass the object itself; an engine that runs
        tasks elsewhere sends it to each worker once per call instead of
        once per task. None: ``fn`` takes the task alone.
    on_start : callable or None, default=None
        ``on_start(i)`` just before task ``i`` runs, and ``on_done(i,
        result)`` (below) just after, for progress reporting. Engines that
        run here (``"threads"``, ``"serial"``) call them in the thread that
        runs the task, so they must be thread-safe; for an engine that runs
        tasks in other processes both are called in the calling thread once
        the batch is back, in task order.
    on_done : callable or None, default=None
        ``on_done(i, result)`` after task ``i``; see ``on_start``.

    Returns
    -------
    list
        ``fn(task)`` for each task, in task order.

    Examples
    --------
    >>> from localsvm import run_tasks
    >>> run_tasks(lambda t: t + 1, range(4), n_jobs=2)
    [1, 2, 3, 4]
    """
    items = list(tasks)
    if n_jobs == 0:
        # effective_n_jobs's error, raised even where the count is not needed.
        raise ValueError("n_jobs must not be 0")
    jobs = None
    name = engine or get_default_engine()
    # The built-in engines run here: a single task or job runs inline without
    # looking the engine up (the common case of small calls), nor counting the
    # CPUs (os.cpu_count reads the system's CPU list on every call).
    eng = None if name in _IN_PROCESS else get_engine(name)
    in_process = eng is None or getattr(eng, "in_process", True)
    inline = len(items) == 0 or (
        in_process
        and (
            len(items) == 1
            or (not thread_safe and name == "threads")
            or (jobs := effective_n_jobs(n_jobs)) == 1
        )
    )
    if on_start is not None or on_done is not None:
        if not in_process:
            results = run_tasks(
                fn, items, n_jobs=n_jobs, engine=engine, thread_safe=thread_safe, shared=shared
            )
            for i, result in enumerate(results):
                if on_start is not None:
                    on_start(i)
                if on_done is not None:
                    on_done(i, result)
            return results
        # In this process: report from the thread that runs each task.
        fn = functools.partial(_reported, fn, on_start, on_done, shared is not None)
        items = list(enumerate(items))  # type: ignore[arg-type]
    if inline:
        if shared is None:
            return [fn(t) for t in items]
        return [fn(t, shared) for t in items]
    if eng is None:
        eng = get_engine(name)
    if jobs is None:
        jobs = effective_n_jobs(n_jobs)
    try:
        if shared is None:
            return eng.map(fn, items, n_jobs=jobs)
        if getattr(eng, "accepts_shared", False):
            return eng.map(fn, items, n_jobs=jobs, shared=shared)
        return eng.map(functools.partial(_with_shared, fn, shared), items, n_jobs=jobs)
    except KeyboardInterrupt:
        # An engine of a plugin may run Rust calls in threads of its own
        # without stopping them: stop them here (the built-in engine already
        # did, and a repeat is harmless).
        interrupt_running()
        raise


def _reported(fn, on_start, on_done, with_shared: bool, item, *shared):
    """``fn`` on the task of ``item = (i, task)``, between ``on_start(i)`` and
    ``on_done(i, result)``."""
    i, task = item
    if on_start is not None:
        on_start(i)
    result = fn(task, *shared) if with_shared else fn(task)
    if on_done is not None:
        on_done(i, result)
    return result


def _with_shared(fn: Callable[..., R], shared: Any, task: Any) -> R:
    """``fn(task, shared)``, for engines that take single-argument functions."""
    return fn(task, shared)
