"""Sphinx configuration of localsvm's documentation.

Build (offline, warnings as errors), from the repository root::

    python3 -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The source tree first when its compiled core is built in place (a developer's
# checkout), so the pages document and plot this checkout; otherwise (a clean
# clone after `pip install .`, as in .ci/run) the installed package.
if any((ROOT / "python" / "localsvm").glob("_core*.so")) or any(
    (ROOT / "python" / "localsvm").glob("_core*.pyd")
):
    for sub in ("experiments", "benchmarks", "python"):
        sys.path.insert(0, str(ROOT / sub))
os.environ.setdefault("MPLBACKEND", "Agg")
# Load only the built-in backends, strategies and engines, whatever is installed.
os.environ.setdefault("LOCALSVM_DISABLE_PLUGIN_AUTOLOAD", "1")

import localsvm  # noqa: E402

project = "localsvm"
author = "the localsvm authors"
copyright = "the localsvm authors, BSD-3-Clause"
release = localsvm.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "matplotlib.sphinxext.plot_directive",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
templates_path = ["_templates"]

# Offline: no intersphinx, nothing fetched at build time.
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

# The plot directive runs each figure's code at build time.
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 96)]
plot_rcparams = {"figure.figsize": (6.4, 4.4), "savefig.bbox": "tight"}
plot_pre_code = "import numpy as np\nimport matplotlib.pyplot as plt\n"

html_theme = "pydata_sphinx_theme"
html_title = f"localsvm {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    # No version switcher or icon links: they would be fetched over the network.
}
html_show_sourcelink = False


def _skip_routing_setters(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods document
    scikit-learn's metadata routing, whose references live in its own docs."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


_SHAPE_NAME = re.compile(r"(?<=[(, ])([A-Za-z]\w*_)(?=[,)])")


def _escape_fitted_names_in_shapes(app, what, name, obj, options, lines):
    """A fitted attribute's name in a parameter's shape, ``(n_cells_,)``,
    would read as a reST reference (a word ending in ``_``); escape it."""
    for i, line in enumerate(lines):
        if " : " in line and "shape" in line:
            lines[i] = _SHAPE_NAME.sub(r"\1\\", line).replace("_\\", "\\_")


def setup(app):
    app.connect("autodoc-skip-member", _skip_routing_setters)
    app.connect("autodoc-process-docstring", _escape_fitted_names_in_shapes)
