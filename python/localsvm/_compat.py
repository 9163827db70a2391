"""Every use of scikit-learn's private API, in one place.

localsvm relies on two private pieces of scikit-learn: the ``_fit_context``
decorator (parameter validation once per ``fit``, nested estimators
skipped) and the parameter-constraint classes of
``sklearn.utils._param_validation`` (so our errors read as scikit-learn's).
A scikit-learn release that moves them breaks this module only;
``pyproject.toml`` states the range the test suite runs against.
"""

from __future__ import annotations

from sklearn.base import _fit_context as fit_context
from sklearn.utils._param_validation import Hidden, Interval, RealNotInt, StrOptions

__all__ = ["Hidden", "Interval", "RealNotInt", "StrOptions", "fit_context"]
