"""localsvm: support vector machines that learn locally, sparsely and
incrementally, on a Rust SMO core.

Estimators follow scikit-learn's API. Solver backends, similarity and
clustering strategies and execution engines are pluggy plugins (see
:mod:`localsvm.hookspecs`).

>>> import localsvm
>>> {"rust", "scipy"} <= set(localsvm.list_backends())
True
"""

import sys as _sys

from . import datasets
from ._core import __version__ as _core_version
from .backends import Capabilities, QPProblem, QPSolution, SolverBackend, select_backend
from .cell_svc import CellSVC
from .cluster_svc import ClusterSVC
from .flsa import FLSAClassifier, FLSAClassifierCV, FLSAPath, FLSARankWarning, RFLSAClassifier
from .hookspecs import hookimpl
from .incremental_svc import IncrementalSVC
from .kernels import KernelSpec
from .local_svc import LocalSVC
from .model_io import load_libsvm_model, save_libsvm_model
from .parallel import run_tasks, set_default_engine, use_engine
from .plugins import (
    get_backend,
    get_clustering,
    get_engine,
    get_plugin_manager,
    get_similarity,
    list_backends,
    list_clusterings,
    list_engines,
    list_similarities,
)
from .profile_svc import ProfileSVC
from .svc import SVC, NuSVC
from .svm_family import SVR, NuSVR, OneClassSVM
from .tuning import SVCCV, SVRCV

#: Each estimator's module is its class's name in snake case
#: (``ProfileSVC`` in :mod:`localsvm.profile_svc`). The older module paths
#: stay importable as the same module objects, so ``from
#: localsvm.profile_svm import ProfileSVC`` and models pickled under those
#: paths keep working.
RENAMED_MODULES = {
    "local": "local_svc",
    "profile_svm": "profile_svc",
    "incremental": "incremental_svc",
    "cluster_svm": "cluster_svc",
    "cell_svm": "cell_svc",
}


def _alias_renamed_modules() -> None:
    for old, new in RENAMED_MODULES.items():
        module = _sys.modules[f"{__name__}.{new}"]
        _sys.modules.setdefault(f"{__name__}.{old}", module)
        globals().setdefault(old, module)


_alias_renamed_modules()

#: The version, written once: rust/Cargo.toml's, compiled into the core
#: (maturin also writes it into the package metadata).
__version__: str = _core_version


def _check_build() -> None:
    """``ImportError`` when the compiled core is older or newer than the
    installed package's metadata (a stale build of a source checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("localsvm")
    except PackageNotFoundError:  # pragma: no cover - imported from a bare source tree
        return
    if installed != _core_version:  # pragma: no cover - a stale build
        raise ImportError(
            f"localsvm's compiled core is version {_core_version} but the installed package "
            f"is {installed}; rebuild it (pip install .)"
        )


_check_build()

__all__ = [
    "SVC",
    "SVCCV",
    "SVR",
    "SVRCV",
    "Capabilities",
    "CellSVC",
    "ClusterSVC",
    "FLSAClassifier",
    "FLSAClassifierCV",
    "FLSAPath",
    "FLSARankWarning",
    "IncrementalSVC",
    "KernelSpec",
    "LocalSVC",
    "NuSVC",
    "NuSVR",
    "OneClassSVM",
    "ProfileSVC",
    "QPProblem",
    "QPSolution",
    "RFLSAClassifier",
    "SolverBackend",
    "__version__",
    "datasets",
    "get_backend",
    "get_clustering",
    "get_engine",
    "get_plugin_manager",
    "get_similarity",
    "hookimpl",
    "list_backends",
    "list_clusterings",
    "list_engines",
    "list_similarities",
    "load_libsvm_model",
    "run_tasks",
    "save_libsvm_model",
    "select_backend",
    "set_default_engine",
    "use_engine",
]
