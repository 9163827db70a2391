"""Reproductions of the papers' experiments: ``python -m localsvm_experiments NAME``.

Each experiment is a module of this package with two functions:
``add_arguments(parser)`` (its command-line options) and ``run(args, out)``
(prints its tables next to the paper's figures, saves its images, and returns
the rows it printed). :data:`EXPERIMENTS` maps a command name to its module.

A command is named after its paper's method (the acronym ``localsvm train
--model`` takes too: ``lsvm``, ``lisvm``, ``flsa``, ``mcsvm``); its help names
the estimator classes it runs. The options they share have one spelling each
(:func:`localsvm_benchmarks.report.add_experiment_options`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXPERIMENTS: dict[str, tuple[str, str]] = {
    "lsvm": (
        "localsvm_experiments.lsvm",
        "Localized SVM paper (Cheng, Tan & Jin, SDM 2007), LocalSVC and ProfileSVC: Table 1; "
        "Figures 2 and 3 as images; --timing for Figure 4",
    ),
    "lisvm": (
        "localsvm_experiments.lisvm",
        "Local incremental SVM paper (LISVM), IncrementalSVC: Banana, Ringnorm, Diabetis as "
        "streams, Figures 2 and 3, final table; --timing for the speed",
    ),
    "flsa": (
        "localsvm_experiments.flsa",
        "FLSA-SVM paper, FLSAClassifier and RFLSAClassifier: sparse least-squares SVMs vs SVM "
        "and LS-SVM; the two spirals as an image; --tuning for the tuning time",
    ),
    "mcsvm": (
        "localsvm_experiments.mcsvm",
        "Multiclass cluster SVM paper, ClusterSVC: Table 1 (MCSVM vs one-vs-rest, one-vs-one "
        "and ECOC SVMs); --timing for the timing against SVC",
    ),
    "usps": (
        "localsvm_experiments.usps",
        "USPS digits with one-vs-rest SVMs (Ulén, 'Support Vector Machines', Lund "
        "University), SVC: RBF and polynomial kernels, C = 10, smoothed images",
    ),
}
"""name → (module, one-line description)."""


def load(name: str) -> ModuleType:
    """Import the experiment module registered as ``name``."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}")
    return importlib.import_module(EXPERIMENTS[name][0])
