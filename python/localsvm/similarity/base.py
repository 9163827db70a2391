"""The similarity-strategy interface.

A strategy turns training and query examples into the ``(n_train, n_query)``
matrix of similarities σ ∈ [0, 1] that weights each training example's box in
a localized SVM. This module defines the interface only and imports nothing
from the plugin manager; :mod:`localsvm.similarity` holds the built-ins and
the lookup by name.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["SimilarityStrategy"]


@runtime_checkable
class SimilarityStrategy(Protocol):
    """The interface of a similarity strategy.

    Attributes
    ----------
    name : str
        The name users pass as ``similarity=...``.
    parameters : tuple of str
        Keyword parameters ``compute`` accepts; estimators fill those they
        have an attribute for (``bandwidth``, ``k``).
    """

    #: The name users pass as ``similarity=...``.
    name: str
    #: Keyword parameters ``compute`` accepts.
    parameters: tuple[str, ...]

    def compute(self, X_train: np.ndarray, X_query: np.ndarray, **params: Any) -> np.ndarray:
        """Compute the similarity of every training example to every query.

        Parameters
        ----------
        X_train : ndarray of shape (n_train, n_features)
            Training examples.
        X_query : ndarray of shape (n_query, n_features)
            Query (test) examples.
        **params : dict
            The strategy's parameters, named in ``parameters``.

        Returns
        -------
        ndarray of shape (n_train, n_query)
            Similarities, values in [0, 1].
        """
        ...
