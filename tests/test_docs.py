"""The examples in localsvm's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import localsvm

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(localsvm.__path__, prefix="localsvm.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", ["localsvm", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
