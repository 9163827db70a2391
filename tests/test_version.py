"""The version is written once, in rust/Cargo.toml: the compiled core, the
package metadata and ``localsvm.__version__`` all read it, and
pyproject.toml declares it dynamic instead of repeating it."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

import localsvm
from localsvm import _core

ROOT = Path(__file__).resolve().parents[1]
tomllib = pytest.importorskip("tomllib")  # Python 3.11+


def test_one_version_everywhere():
    cargo = tomllib.loads((ROOT / "rust" / "Cargo.toml").read_text())["package"]["version"]
    assert localsvm.__version__ == _core.__version__ == cargo
    assert importlib.metadata.version("localsvm") == cargo


def test_pyproject_does_not_repeat_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project
    assert "version" in project["dynamic"]
