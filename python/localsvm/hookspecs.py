"""The hooks through which plugins extend localsvm (all named ``localsvm_*``).

A plugin is any module or object with functions marked ``@localsvm.hookimpl``
whose names match the specifications below. Third-party packages make
themselves known through the ``localsvm`` entry-point group::

    [project.entry-points.localsvm]
    myplugin = "my_package.localsvm_plugin"

Every hook here is a *registration* hook: it receives a ``register`` callback
and calls it once per thing it provides. Each thing carries a stable ``name``
(what users pass as ``backend=...``, ``similarity=...``, ...); two plugins
registering the same name is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pluggy

# This module imports nothing from localsvm (the registered objects are typed
# in the docstrings), so every module may import ``hookimpl`` without a cycle.

PROJECT_NAME = "localsvm"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


def register_builtins(hook: str, *makers: Callable[[], Any]) -> Callable[[Any], None]:
    """A hook implementation of ``hook`` that registers one object made by
    each of ``makers``: what a localsvm module assigns to ``hook``'s name
    to offer its built-in backends, strategies or engines.

    Parameters
    ----------
    hook : str
        The hook's name, such as ``"localsvm_register_backends"``.
    *makers : callable
        Each called with no argument; the object it returns is registered.

    Returns
    -------
    callable
        ``register -> None``, marked with :data:`hookimpl`.
    """

    def implementation(register: Callable[[Any], Any]) -> None:
        for make in makers:
            register(make())

    implementation.__name__ = implementation.__qualname__ = hook
    names = ", ".join(make.__name__ for make in makers)
    implementation.__doc__ = (
        f"Register the built-in {names}.\n\n"
        "Parameters\n----------\nregister : callable\n"
        "    Called once per object; it rejects a name that is already taken.\n"
    )
    return hookimpl(implementation)


@hookspec
def localsvm_register_backends(register: Callable[[Any], Any]) -> None:
    """Register solver backends.

    Call ``register(backend)`` for each backend. A backend has ``name``
    (str), ``priority`` (int; ``backend="auto"`` prefers higher), and
    ``capabilities`` (:class:`localsvm.backends.Capabilities`), a method
    ``check(problem) -> str | None`` (``None`` when it can solve the problem,
    else the reason) and ``solve(problem) -> QPSolution``; see
    :class:`localsvm.backends.SolverBackend`.
    """


@hookspec
def localsvm_register_similarities(register: Callable[[Any], Any]) -> None:
    """Register similarity strategies σ(x_s, x_i) for localized SVMs.

    Call ``register(strategy)`` for each strategy: an object with ``name`` and
    ``compute(X_train, X_query, **params) -> ndarray`` of shape
    ``(n_train, n_query)`` with values in [0, 1]; see
    :class:`localsvm.similarity.SimilarityStrategy`.
    """


@hookspec
def localsvm_register_clusterings(register: Callable[[Any], Any]) -> None:
    """Register clustering strategies (e.g. for Profile SVM).

    Call ``register(strategy)`` for each strategy: an object with ``name`` and
    ``cluster(profiles, y, n_clusters, *, random_state, **params) ->
    ClusteringResult``; see :class:`localsvm.clustering.ClusteringStrategy`.
    """


@hookspec
def localsvm_register_engines(register: Callable[[Any], Any]) -> None:
    """Register execution engines for independent pieces of work.

    Call ``register(engine)`` for each engine: an object with ``name`` and
    ``map(fn, tasks, *, n_jobs) -> list`` that returns ``[fn(t) for t in
    tasks]`` in order, optionally taking ``shared=`` (data every task reads,
    passed as ``fn(t, shared)``; declare ``accepts_shared = True``); see
    :class:`localsvm.engines.Engine`. This is where a cluster engine plugs
    in (``plugins/localsvm-dask`` is one).
    """
