"""Docstring text shared by several public functions and classes.

One helper, :func:`render`, fills ``{name}`` fields of a template with the
shared paragraphs below (or any text given), so that a paragraph written
once reads the same wherever it is documented. A field alone on its line
takes that line's indentation for every line it inserts; any other braces
(such as ``{array-like, sparse matrix}``) are left as they are. The rendered
docstrings are ordinary numpydoc text: ``help()``, Sphinx and the doctests
see the filled-in result.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable
from typing import TypeVar

_F = TypeVar("_F", bound=Callable)

_FIELD = re.compile(r"\{(\w+)\}")

# ``X`` of ``fit`` for estimators that take ``kernel='precomputed'``.
X_TRAIN = """\
X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
    Training examples, or the square training kernel for
    ``kernel='precomputed'``."""

# ``X, y`` of ``fit`` for classifiers that take feature rows only.
X_Y_CLASSES = """\
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Training examples.
y : array-like of shape (n_samples,)
    Class labels."""

# ``X`` of a method that takes feature rows only.
X_ROWS = """\
X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Examples."""

# ``X`` of the prediction methods of estimators that take ``kernel='precomputed'``.
X_PREDICT = """\
X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_train)
    Examples, or their kernel with the training examples for
    ``kernel='precomputed'``."""


# The first and last of a classifier's usual attributes.
CLASSES = """\
classes_ : ndarray of shape (n_classes,)
    The class labels, sorted."""
N_FEATURES_IN = """\
n_features_in_ : int
    Number of features seen during fit."""


def parameters(part: str) -> str:
    """The numpydoc ``Parameters`` section whose entries are ``part``."""
    return f"Parameters\n----------\n{part}"


def attributes(*parts: str) -> str:
    """The numpydoc ``Attributes`` section whose entries are ``parts``."""
    return "Attributes\n----------\n" + "\n".join(parts)


#: The Attributes section's start of a classifier with no other attribute to
#: put between these two.
CLASSIFIER_ATTRIBUTES = attributes(CLASSES, N_FEATURES_IN)

#: The ``X`` parts of the estimators that take ``kernel='precomputed'``, as
#: ``fill`` takes them: ``{X_train}`` and ``{X_predict}`` alone, and
#: ``{X_train_parameters}`` and ``{X_predict_parameters}`` with the section
#: header (the whole Parameters section of ``predict``-like methods).
X_PARTS = {
    "X_train": X_TRAIN,
    "X_predict": X_PREDICT,
    "X_train_parameters": parameters(X_TRAIN),
    "X_predict_parameters": parameters(X_PREDICT),
    # The Parameters and Returns sections of a classifier's ``predict``.
    "predict_sections": parameters(X_PREDICT)
    + """

Returns
-------
ndarray of shape (n_samples,)
    The predicted labels, taken from ``classes_``.""",
}


def render(template: str, /, **parts: str) -> str:
    """Fill the ``{name}`` fields of ``template`` named in ``parts``."""

    def whole_line(match: re.Match) -> str:
        indent, key = match.group(1), match.group(2)
        if key not in parts:
            return match.group(0)
        text = textwrap.dedent(parts[key]).lstrip("\n")
        if not text:
            return ""  # an empty part takes its line with it
        text = textwrap.indent(text, indent, lambda line: bool(line.strip()))
        return text if text.endswith("\n") else text + "\n"

    text = re.sub(r"^([ \t]*)\{(\w+)\}[ \t]*(?:\n|\Z)", whole_line, template, flags=re.M)
    return _FIELD.sub(lambda m: parts.get(m.group(1), m.group(0)), text)


def fill(**parts: str) -> Callable[[_F], _F]:
    """Decorate a function or class: fill its docstring's fields from ``parts``.

    On a class, the docstrings of the methods it defines are filled too.
    """

    def decorate(obj: _F) -> _F:
        obj.__doc__ = render(obj.__doc__ or "", **parts)
        if isinstance(obj, type):
            for member in vars(obj).values():
                if inspect.isfunction(member) and member.__doc__:
                    member.__doc__ = render(member.__doc__, **parts)
        return obj

    return decorate


def doc(template: str, /, **parts: str) -> Callable[[_F], _F]:
    """Decorate a function or class: its docstring is ``template`` with ``parts`` filled in."""

    def decorate(obj: _F) -> _F:
        obj.__doc__ = render(template, **parts)
        return obj

    return decorate
