"""Every use of scikit-learn's private API, in one place.

localsvm relies on two private pieces of scikit-learn: the ``_fit_context``
decorator (parameter validation once per ``fit``, nested estimators
skipped) and the parameter-constraint classes of
``sklearn.utils._param_validation`` (so our errors read as scikit-learn's).
A scikit-learn release that moves them breaks this module only;
``pyproject.toml`` states the range the test suite runs against.

The callback API (``sklearn.callback``, new in scikit-learn 1.9) is imported
here too: ``CallbackSupportMixin`` gives the estimators ``set_callbacks`` and
``_init_callback_context``, and the private ``callback_management_context``
(the ``teardown`` half of ``with_callbacks``) is what ``_fit_context``
already wraps every ``fit`` in.
"""

from __future__ import annotations

from sklearn.base import _fit_context as fit_context
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions

try:
    from sklearn.callback import CallbackContext, CallbackSupportMixin, with_callbacks
except ImportError:  # scikit-learn < 1.9: no callback API, fits report nothing
    CallbackContext = None

    class CallbackSupportMixin:  # type: ignore[no-redef]
        """Stand-in for scikit-learn < 1.9, which has no callback API."""

    def with_callbacks(method):  # type: ignore[no-redef]
        """Stand-in for scikit-learn < 1.9: ``method`` unchanged."""
        return method


__all__ = [
    "CallbackContext",
    "CallbackSupportMixin",
    "Interval",
    "RealNotInt",
    "StrOptions",
    "fit_context",
    "with_callbacks",
]
