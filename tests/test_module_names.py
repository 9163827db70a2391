"""Each estimator's module is named after its class; the older module paths
still import the same module objects (and load models pickled under them)."""

from __future__ import annotations

import importlib
import pickle
import re

import numpy as np
import pytest

import localsvm
from localsvm import RENAMED_MODULES


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize(
    "cls",
    [
        localsvm.LocalSVC,
        localsvm.ProfileSVC,
        localsvm.IncrementalSVC,
        localsvm.ClusterSVC,
        localsvm.CellSVC,
        localsvm.SVC,
    ],
)
def test_an_estimator_lives_in_the_module_named_after_it(cls):
    assert cls.__module__ == f"localsvm.{_snake(cls.__name__)}"


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED_MODULES.items()))
def test_old_module_paths_are_the_same_modules(old, new):
    module = importlib.import_module(f"localsvm.{new}")
    assert importlib.import_module(f"localsvm.{old}") is module
    assert getattr(localsvm, old) is module


def test_a_model_pickled_under_an_old_path_loads():
    X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 1.0], [0.9, 1.0]])
    y = np.array([0, 0, 1, 1])
    model = localsvm.LocalSVC(k=2).fit(X, y)
    data = pickle.dumps(model, protocol=2)
    assert b"localsvm.local_svc" in data
    old = pickle.loads(data.replace(b"localsvm.local_svc", b"localsvm.local"))
    np.testing.assert_array_equal(old.predict(X), model.predict(X))
