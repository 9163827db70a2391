"""localsvm-dask: run localsvm's batches of independent solves on a Dask cluster.

Every estimator in localsvm hands its independent pieces of work (one QP per
class pair, per class, per cluster, per chunk of local problems, per
cross-validation fold) to :func:`localsvm.run_tasks`, which passes them to an
*engine*. This package registers an engine named ``"dask"`` that runs them on
a `Dask <https://distributed.dask.org>`_ cluster::

    import localsvm
    from distributed import Client

    if __name__ == "__main__":  # local workers import the script again
        client = Client("tcp://scheduler:8786")   # or LOCALSVM_DASK_SCHEDULER
        with localsvm.use_engine("dask"):
            localsvm.SVC().fit(X, y)

Which cluster
-------------
In this order: the client given to :class:`DaskEngine` (for an engine built
by hand); the current :class:`distributed.Client` (the one made last, or the
one of an ``as_current`` block); a client connected to the scheduler address
in ``$LOCALSVM_DASK_SCHEDULER``, waiting at most ``$LOCALSVM_DASK_TIMEOUT``
seconds (default 10) before a :class:`ConnectionError`; otherwise a
:class:`distributed.LocalCluster` of this machine, started on first use with
one single-threaded worker process per core and closed when the
interpreter exits. Its worker processes import the main script again, so a
script's work must sit under ``if __name__ == "__main__":``; started from a
script's unguarded top level, the engine raises a one-line
:class:`RuntimeError` saying so instead of starting the cluster.

What travels
------------
A batch's shared data (the training matrix, a Gram matrix, the σ and cross
kernel blocks of the local problems or the queries' features, the chosen backend; see
:func:`localsvm.run_tasks`) is scattered to every worker once per batch; each
task then carries only its own small arguments (a pair's rows and labels, a
chunk of query indices, a fold's index arrays) and returns its solution. The
task functions are module-level functions of localsvm, so workers need
localsvm (and any plugin a model uses) installed in the same version.

The engine ignores ``n_jobs``: the cluster's workers decide the parallelism,
and every batch, even a single task, goes to the cluster. Each worker process
of the :class:`~distributed.LocalCluster` it starts runs the Rust solvers
with one thread (``RAYON_NUM_THREADS=1``); on a cluster you start yourself,
set that variable in the workers' environment (or run one worker per
machine) so that workers do not compete for cores.

Faults are Dask's: a task whose worker dies is run again elsewhere (the
result is the same, as every task is deterministic); an exception raised by
a task reaches the caller with its original type and message; Ctrl-C in the
caller cancels the batch's pending tasks.
"""

from __future__ import annotations

import ast
import atexit
import importlib.metadata
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import localsvm

__all__ = [
    "DEFAULT_TIMEOUT",
    "ENV_SCHEDULER",
    "ENV_TIMEOUT",
    "DaskEngine",
    "localsvm_register_engines",
    "shutdown_local_cluster",
]

#: The version in pyproject.toml (the installed metadata), written once.
__version__ = importlib.metadata.version("localsvm-dask")

#: Environment variable naming the scheduler to connect to (``tcp://host:8786``).
ENV_SCHEDULER = "LOCALSVM_DASK_SCHEDULER"
#: Environment variable with the connection timeout in seconds.
ENV_TIMEOUT = "LOCALSVM_DASK_TIMEOUT"
#: Seconds to wait for the scheduler named by ``$LOCALSVM_DASK_SCHEDULER``.
DEFAULT_TIMEOUT = 10.0

_NOTHING = object()
_lock = threading.Lock()
_clients: dict[str, Any] = {}  # scheduler address -> Client made by this package
_local: dict[str, Any] = {}  # "cluster", "client": the LocalCluster started here


def _timeout() -> float:
    raw = os.environ.get(ENV_TIMEOUT, "")
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{ENV_TIMEOUT} must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{ENV_TIMEOUT} must be positive, got {raw!r}")
    return value


def _connect(address: str) -> Any:
    """A client of the scheduler at ``address``, made once per address."""
    from distributed import Client

    with _lock:
        client = _clients.get(address)
        if client is not None and client.status == "running":
            return client
        timeout = _timeout()
        try:
            client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as err:
            raise ConnectionError(
                f"could not reach the Dask scheduler at {address!r} (from ${ENV_SCHEDULER}) "
                f"within {timeout:g} s: {err}. Start the scheduler, correct the address, or "
                f"unset {ENV_SCHEDULER} to use a local cluster."
            ) from err
        _clients[address] = client
        return client


def _is_main_test(node: ast.expr) -> bool:
    """Whether ``node`` is ``__name__ == "__main__"`` (either way round)."""
    if not (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.Eq)
        and len(node.comparators) == 1
    ):
        return False
    sides = {type(node.left), type(node.comparators[0])}
    names = [s for s in (node.left, node.comparators[0]) if isinstance(s, ast.Name)]
    texts = [s for s in (node.left, node.comparators[0]) if isinstance(s, ast.Constant)]
    return (
        sides == {ast.Name, ast.Constant}
        and names[0].id == "__name__"
        and texts[0].value == "__main__"
    )


def _unguarded_call_line() -> tuple[str, int] | None:
    """The script and line where the running script's top-level code led
    here, when that line is outside ``if __name__ == "__main__":``; None when
    it is inside one, or when no script file runs (an interactive session,
    ``python -c``, a notebook).

    Worker processes started with the ``spawn`` or ``forkserver`` method
    import the main script again before they start: code at its top level
    outside that guard runs again in each of them, and a local cluster
    started there fails (Python's multiprocessing documentation, "Safe
    importing of main module").
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return None
    top = None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is vars(main):
            top = frame
        frame = frame.f_back
    if top is None:
        return None
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    line = top.f_lineno
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and _is_main_test(node.test)
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            return None
    return path, line


def _check_main_guard() -> None:
    """Refuse, in one line, to start a local cluster whose worker processes
    would run the calling script's unguarded top level again."""
    import dask

    method = dask.config.get("distributed.worker.multiprocessing-method", "spawn")
    if method not in ("spawn", "forkserver"):
        return
    where = _unguarded_call_line()
    if where is not None:
        path, line = where
        raise RuntimeError(
            f"the Dask engine starts a local cluster whose worker processes import "
            f"{path} again, which would run its line {line} again in each of them: put "
            f'the script\'s code under `if __name__ == "__main__":`, or connect to a running '
            f"scheduler (distributed.Client(address), or ${ENV_SCHEDULER})"
        )


def _local_client() -> Any:
    """A client of a :class:`~distributed.LocalCluster` of this machine,
    started on first use: one single-threaded worker process per core.
    A :class:`RuntimeError` when the calling script's top level is not
    guarded by ``if __name__ == "__main__":`` (see
    :func:`_unguarded_call_line`)."""
    from distributed import Client, LocalCluster

    with _lock:
        client = _local.get("client")
        if client is not None and client.status == "running":
            return client
        _check_main_guard()
        cluster = LocalCluster(
            n_workers=os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"RAYON_NUM_THREADS": "1"},
        )
        client = Client(cluster, set_as_default=False)
        _local.update(cluster=cluster, client=client)
        return client


def shutdown_local_cluster() -> None:
    """Close the local cluster and the scheduler clients this package made.

    Called when the interpreter exits; call it earlier to free the worker
    processes. A later batch starts (or connects) again.
    """
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
        client, cluster = _local.pop("client", None), _local.pop("cluster", None)
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


atexit.register(shutdown_local_cluster)


class DaskEngine:
    """The ``"dask"`` engine: a batch's tasks as Dask futures.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        The cluster to use. None: the current client, else the scheduler at
        ``$LOCALSVM_DASK_SCHEDULER``, else a local cluster (see the module
        documentation).

    Attributes
    ----------
    name : str
        ``"dask"``.
    accepts_shared : bool
        True: shared data is scattered to the workers once per batch.
    in_process : bool
        False: every batch goes to the cluster, whatever ``n_jobs``.

    Examples
    --------
    >>> import localsvm
    >>> "dask" in localsvm.list_engines()
    True
    """

    name = "dask"
    accepts_shared = True
    in_process = False

    def __init__(self, client: Any = None) -> None:
        self._client = client

    def client(self) -> Any:
        """Return the client this engine submits to.

        Returns
        -------
        distributed.Client
            The cluster chosen as the module documentation says.

        Raises
        ------
        ConnectionError
            If ``$LOCALSVM_DASK_SCHEDULER`` names a scheduler that does not
            answer within ``$LOCALSVM_DASK_TIMEOUT`` seconds.
        """
        if self._client is not None:
            return self._client
        from distributed import Client

        try:
            return Client.current()
        except ValueError:
            pass
        address = os.environ.get(ENV_SCHEDULER, "").strip()
        if address:
            return _connect(address)
        return _local_client()

    def map(
        self,
        fn: Callable[..., Any],
        tasks: Sequence[Any],
        *,
        n_jobs: int,
        shared: Any = _NOTHING,
    ) -> list[Any]:
        """Compute ``[fn(t) for t in tasks]`` (or ``fn(t, shared)``) on the cluster.

        Parameters
        ----------
        fn : callable
            A picklable function (module-level, or one cloudpickle can ship).
        tasks : sequence
            The tasks, in order.
        n_jobs : int
            Ignored: the cluster's workers set the parallelism.
        shared : object, optional
            Data every task reads; scattered to all workers once.

        Returns
        -------
        list
            The results in task order.
        """
        tasks = list(tasks)
        if not tasks:
            return []
        client = self.client()
        extra = {}
        data = None
        if shared is not _NOTHING:
            # One future holding the whole object, replicated on every worker.
            [data] = client.scatter([shared], broadcast=True, hash=False)
            extra["shared"] = data
        futures = client.map(_call, tasks, fn=fn, pure=False, **extra)
        try:
            return client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise
        finally:
            del futures
            if data is not None:
                data.release()


def _call(task: Any, fn: Callable[..., Any], shared: Any = _NOTHING) -> Any:
    """Run one task on a worker: ``fn(task)`` or ``fn(task, shared)``."""
    if shared is _NOTHING:
        return fn(task)
    return fn(task, shared)


@localsvm.hookimpl
def localsvm_register_engines(register: Callable[[Any], Any]) -> None:
    """Register the ``"dask"`` engine with localsvm.

    Parameters
    ----------
    register : callable
        localsvm's registration callback.
    """
    register(DaskEngine())
