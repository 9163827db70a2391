"""Every use of scikit-learn's private API, in one place.

localsvm relies on three private pieces of scikit-learn: the ``_fit_context``
decorator (parameter validation once per ``fit``, nested estimators
skipped), the parameter-constraint classes of
``sklearn.utils._param_validation`` (so our errors read as scikit-learn's)
and ``GroupsConsumerMixin``, the base of the splitters that split by
groups (which :class:`localsvm.CellSVC`'s per-cell search refuses).
A scikit-learn release that moves them breaks this module only;
``pyproject.toml`` states the range the test suite runs against.

The callback API (``sklearn.callback``, new in scikit-learn 1.9) is imported
here too: ``CallbackSupportMixin`` gives the estimators ``set_callbacks`` and
``_init_callback_context``; ``_fit_context`` already runs every ``fit`` in
the callbacks' ``teardown`` guard (what ``with_callbacks`` adds to other
methods), so nothing else is needed.
"""

from __future__ import annotations

from sklearn.base import _fit_context as fit_context
from sklearn.model_selection._split import GroupsConsumerMixin
from sklearn.utils._param_validation import HasMethods, Hidden, Interval, RealNotInt, StrOptions

try:
    from sklearn.callback import CallbackSupportMixin
except ImportError:  # scikit-learn < 1.9: no callback API, fits report nothing

    class CallbackSupportMixin:  # type: ignore[no-redef]
        """Stand-in for scikit-learn < 1.9, which has no callback API."""


__all__ = [
    "CallbackSupportMixin",
    "GroupsConsumerMixin",
    "HasMethods",
    "Hidden",
    "Interval",
    "RealNotInt",
    "StrOptions",
    "fit_context",
]
