"""The plugin manager and the registries built from its hooks.

:func:`get_plugin_manager` creates one :class:`pluggy.PluginManager` lazily:
hook specifications, then third-party plugins from the ``localsvm`` entry-point
group (skipped when the environment variable
``LOCALSVM_DISABLE_PLUGIN_AUTOLOAD`` is set to anything but ``""``/``"0"``),
then the built-in plugins in :data:`DEFAULT_PLUGINS`, then
``check_pending()`` (a misspelt hook name in a plugin fails loudly).

>>> from localsvm import list_backends
>>> "rust" in list_backends()
True
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Any

import pluggy

from . import hookspecs
from ._docstrings import doc

ENTRY_POINT_GROUP = "localsvm"
DISABLE_AUTOLOAD_ENV = "LOCALSVM_DISABLE_PLUGIN_AUTOLOAD"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "localsvm.backends.rust",
    "localsvm.backends.scipy_qp",
    "localsvm.similarity",
    "localsvm.clustering",
    "localsvm.engines",
)

_lock = threading.RLock()
_manager: pluggy.PluginManager | None = None
_registries: dict[str, tuple[frozenset[int], dict[str, Any], list[Any]]] = {}


class PluginError(RuntimeError):
    """A plugin registered something invalid (e.g. a name already taken)."""


def _autoload_disabled() -> bool:
    return os.environ.get(DISABLE_AUTOLOAD_ENV, "") not in ("", "0")


def get_plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager, created on first use.

    Returns
    -------
    pluggy.PluginManager
        The manager holding localsvm's hook specifications, the third-party
        plugins of the ``localsvm`` entry-point group and the built-in ones.

    Examples
    --------
    >>> from localsvm import get_plugin_manager
    >>> pm = get_plugin_manager()
    >>> pm.project_name, pm.has_plugin("localsvm.backends.rust")
    ('localsvm', True)
    """
    global _manager
    with _lock:
        if _manager is None:
            pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
            pm.add_hookspecs(hookspecs)
            if not _autoload_disabled():
                pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            for module_name in DEFAULT_PLUGINS:
                if pm.get_plugin(module_name) is None:
                    pm.register(importlib.import_module(module_name), name=module_name)
            pm.check_pending()
            _manager = pm
        return _manager


def reset_plugin_manager() -> None:
    """Forget the plugin manager (the next call builds a fresh one). For tests."""
    global _manager
    with _lock:
        _manager = None
        _registries.clear()


def _registry(hook: str, kind: str) -> dict[str, Any]:
    """``name -> object`` for everything registered through ``hook``, rebuilt
    whenever the set of registered plugins changes."""
    pm = get_plugin_manager()
    with _lock:
        plugins = list(pm.get_plugins())
        key = frozenset(id(p) for p in plugins)
        cached = _registries.get(hook)
        if cached is not None and cached[0] == key:
            return cached[1]
        items: dict[str, Any] = {}

        def register(obj: Any) -> Any:
            name = getattr(obj, "name", None)
            if not isinstance(name, str) or not name:
                raise PluginError(f"a {kind} must have a non-empty string 'name', got {obj!r}")
            if name in items:
                raise PluginError(
                    f"two plugins register a {kind} named {name!r}: {items[name]!r} and {obj!r}"
                )
            items[name] = obj
            return obj

        getattr(pm.hook, hook)(register=register)
        # The plugins are kept with the key: while they are referenced here no
        # new plugin can reuse one of their ids, so an unregistered plugin and
        # a newly registered one never look like the same set.
        _registries[hook] = (key, items, plugins)
        return items


def _get(hook: str, kind: str, name: str) -> Any:
    items = _registry(hook, kind)
    if name not in items:
        known = ", ".join(repr(k) for k in sorted(items)) or "none"
        plural = "similarities" if kind == "similarity" else f"{kind}s"
        raise ValueError(f"unknown {kind} {name!r}; registered {plural}: {known}")
    return items[name]


def backends() -> dict[str, Any]:
    """Registered solver backends by name."""
    return dict(_registry("localsvm_register_backends", "backend"))


def similarities() -> dict[str, Any]:
    """Registered similarity strategies by name."""
    return dict(_registry("localsvm_register_similarities", "similarity"))


def clusterings() -> dict[str, Any]:
    """Registered clustering strategies by name."""
    return dict(_registry("localsvm_register_clusterings", "clustering"))


def engines() -> dict[str, Any]:
    """Registered execution engines by name."""
    return dict(_registry("localsvm_register_engines", "engine"))


_LIST_DOC = """List the names of the registered {what}.

    Returns
    -------
    list of str
        The names, sorted; each is accepted as {accepted}.

    Examples
    --------
    >>> from localsvm import list_{kind}
    {example}
    """

_GET_DOC = """Return the {what} registered as ``name``.

    Parameters
    ----------
    name : str
        A name from :func:`list_{kind}`.

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        {raises}

    Examples
    --------
    >>> from localsvm import get_{single}
    {example}
    """
_UNKNOWN = "If nothing is registered under that name."
# Per kind of plugin: (plural, what one is, what several are, the parameter that takes its name,
# a list_* example, a get_* Returns section, a get_* example). Keep in step with the
# tuple ``_docs`` unpacks.
_KINDS: dict[str, tuple[str, ...]] = {
    "backend": (
        "backends",
        "solver backend",
        "solver backends",
        "``backend=``",
        '>>> {"rust", "scipy"} <= set(list_backends())\nTrue',
        "SolverBackend\n    The backend object (anything with ``name``, ``priority``,\n"
        "    ``capabilities``, ``check`` and ``solve``).",
        ">>> get_backend(\"rust\")\n<RustBackend 'rust'>",
    ),
    "similarity": (
        "similarities",
        "similarity strategy",
        "similarity strategies",
        "``similarity=``",
        ">>> list_similarities()[:2]\n['gaussian', 'knn']",
        "object\n    An object with ``name``, ``parameters`` and ``compute``.",
        ">>> get_similarity(\"gaussian\").name\n'gaussian'",
    ),
    "clustering": (
        "clusterings",
        "clustering strategy",
        "clustering strategies",
        "``clustering=``",
        '>>> "magkmeans" in list_clusterings()\nTrue',
        "object\n    An object with ``name`` and ``cluster``.",
        ">>> get_clustering(\"magkmeans\").name\n'magkmeans'",
    ),
    "engine": (
        "engines",
        "execution engine",
        "execution engines",
        "``engine=`` and :func:`localsvm.use_engine`",
        '>>> {"serial", "threads"} <= set(list_engines())\nTrue',
        "object\n    An object with ``name`` and ``map``.",
        ">>> get_engine(\"serial\").name\n'serial'",
    ),
}


def _docs(template: str, single: str) -> Any:
    """The docstring of ``list_<plural>`` or ``get_<single>`` for one kind of plugin."""
    kind, one, many, accepted, listed, returns, got = _KINDS[single]
    return doc(
        template,
        what=one if template is _GET_DOC else many,
        kind=kind,
        single=single,
        accepted=accepted,
        returns=returns,
        raises=_UNKNOWN if single != "backend" else _NO_BACKEND,
        example=got if template is _GET_DOC else listed,
    )


_NO_BACKEND = "If no backend has that name; the message lists the registered ones."


@_docs(_LIST_DOC, "backend")
def list_backends() -> list[str]:
    return sorted(backends())


@_docs(_LIST_DOC, "similarity")
def list_similarities() -> list[str]:
    return sorted(similarities())


@_docs(_LIST_DOC, "clustering")
def list_clusterings() -> list[str]:
    return sorted(clusterings())


@_docs(_LIST_DOC, "engine")
def list_engines() -> list[str]:
    return sorted(engines())


@_docs(_GET_DOC, "backend")
def get_backend(name: str) -> Any:
    return _get("localsvm_register_backends", "backend", name)


@_docs(_GET_DOC, "similarity")
def get_similarity(name: str) -> Any:
    return _get("localsvm_register_similarities", "similarity", name)


@_docs(_GET_DOC, "clustering")
def get_clustering(name: str) -> Any:
    return _get("localsvm_register_clusterings", "clustering", name)


@_docs(_GET_DOC, "engine")
def get_engine(name: str) -> Any:
    return _get("localsvm_register_engines", "engine", name)
