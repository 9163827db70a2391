"""Benchmark data bundled with localsvm, loaded the way scikit-learn loads its
toy data.

Each loader returns a :class:`sklearn.utils.Bunch` with the same core
fields: ``X, y`` (every example) and ``has_split``; sets with a standard
split (``has_split`` True) also have ``X_train, y_train, X_test, y_test``,
and ``X, y`` are the training rows followed by the test rows. IDA-style sets
(banana) hold ten realizations of the split and take ``realization`` (0–9).
``return_X_y=True`` returns just ``(X, y)``, as scikit-learn's loaders do.
Labels keep the source's values. ``DESCR`` cites the source.

>>> from localsvm.datasets import load_banana
>>> b = load_banana()
>>> b.X_train.shape, b.X_test.shape
((400, 2), (4900, 2))
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from importlib import resources
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch

from .._docstrings import render

__all__ = [
    "DATASETS",
    "list_datasets",
    "load_a9a",
    "load_banana",
    "load_breast_w",
    "load_dataset",
    "load_diabetis",
    "load_glass",
    "load_heart",
    "load_ijcnn1",
    "load_image",
    "load_iris",
    "load_ringnorm",
    "load_segmentation",
    "load_splice",
    "load_two_spirals",
    "load_usps",
    "load_vehicle",
    "load_waveform",
    "load_yeast",
]

_IDA = (
    "G. Rätsch, T. Onoda, K.-R. Müller, 'Soft margins for AdaBoost', Machine Learning "
    "42(3), 2001 (IDA benchmark repository)."
)
_PMLB = "via PMLB (Olson et al., BioData Mining 10:36, 2017)."
_LIBSVM = (
    "LIBSVM data sets, C.-C. Chang & C.-J. Lin, https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/"
)

DATASETS: dict[str, str] = {
    "banana": "Banana, 2 features, 2 classes (−1/+1), 10 realizations of 400 train / 4900 test. "
    + _IDA,
    "usps": "USPS handwritten digits, 256 pixels in [0, 1], 10 classes, 7291 train / 2007 "
    "test. J. J. Hull, 'A database for handwritten text recognition research', IEEE PAMI "
    "16(5), 1994.",
    "ijcnn1": "ijcnn1, 22 features, 2 classes (−1/+1), 49990 train (tr + val) / 91701 test. "
    "D. Prokhorov, IJCNN 2001 neural network competition; " + _LIBSVM,
    "a9a": "a9a (UCI Adult), 123 binary features, 2 classes (−1/+1), 32561 train / 16281 "
    "test. J. Platt's preprocessing of UCI Adult; " + _LIBSVM,
    "iris": "Iris, 4 features, 3 classes (0–2), 150 examples, no standard split. R. A. "
    "Fisher, 1936, " + _PMLB,
    "breast_w": "Wisconsin breast cancer (original), 9 integer features in 1–10, 2 classes "
    "(0 benign / 1 malignant), 699 examples, no standard split. W. H. Wolberg & O. L. "
    "Mangasarian, PNAS 87, 1990; UCI, " + _PMLB,
    "glass": "Glass identification, 9 features, 5 classes (1, 2, 3, 5, 7; UCI's class 6 "
    "dropped), 205 examples, no standard split. B. German, UCI, " + _PMLB,
    "yeast": "Yeast protein localization, 8 features, 9 classes (0–8), 1479 examples, no "
    "standard split. K. Nakai & P. Horton, UCI, " + _PMLB,
    "splice": "Splice junctions (IDA's splice), 60 integer-coded nucleotides, 2 classes "
    "(−1/+1), 3175 examples, no split stored (the FLSA paper uses 1000 / 2175). " + _IDA,
    "image": "Image segmentation (IDA's image), 18 features, 2 classes (−1/+1), 10 "
    "realizations of 1300 train / 1010 test (in this copy realization 9 repeats realization 0). "
    + _IDA,
    "ringnorm": "Ringnorm (IDA), 20 features, 2 classes (−1/+1), 10 realizations of 400 "
    "train / 7000 test drawn from one pool of 7400 points (``points``). L. Breiman, "
    "'Bias, variance and arcing classifiers', TR 460, UC Berkeley, 1996; " + _IDA,
    "diabetis": "Diabetis (IDA; Pima Indians diabetes), 8 features, 2 classes (−1/+1), 10 "
    "realizations of 468 train / 300 test drawn from one pool of 768 points (``points``; the "
    "copy does not say which of IDA's 100 realizations these are). UCI, via " + _IDA,
    "segmentation": "Image segmentation (StatLog 'segment'), 19 features of 3×3 pixel regions "
    "of outdoor images, 7 classes (0–6), "
    "2310 examples (330 per class), no standard split. Vision Group, University of "
    "Massachusetts; UCI, " + _PMLB,
    "vehicle": "Vehicle silhouettes (StatLog), 18 shape features, 4 classes (1–4: four "
    "vehicle types), 846 examples, no standard split. J. P. Siebert, Turing Institute, 1987; "
    "UCI, " + _PMLB,
    "waveform_21": "Waveform (version 1), 21 noisy features, 3 classes (0–2), "
    "5000 examples, no standard split. L. Breiman, J. H. Friedman, R. A. Olshen & C. J. Stone, "
    "'Classification and Regression Trees', Wadsworth, 1984; UCI, " + _PMLB,
    "heart_statlog": "Heart disease (StatLog), 13 clinical features, 2 classes (0 absent / 1 "
    "present), 270 examples, no standard split. UCI, " + _PMLB,
    "two_spirals": "Two spirals, 2 features, 2 classes (−1/+1), 194 points. K. J. Lang & M. J. "
    "Witbrock, 1988, CMU Neural Network Benchmark collection.",
}


def list_datasets() -> list[str]:
    """List the names of the bundled data sets.

    Returns
    -------
    list of str
        The names :func:`load_dataset` accepts, sorted.

    Examples
    --------
    >>> from localsvm.datasets import list_datasets
    >>> list_datasets()[:4]
    ['a9a', 'banana', 'breast_w', 'diabetis']
    """
    return sorted(DATASETS)


def load_dataset(
    name: str, *, realization: int | None = None, return_X_y: bool = False
) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load a bundled data set by name.

    The names and sources are listed in :data:`DATASETS`.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets`.
    realization : int or None, default=None
        Which of the ten splits of an IDA-style set (banana, image, ringnorm)
        to return; None means 0. It is an error for the other sets.
    return_X_y : bool, default=False
        Return ``(X, y)`` (every example; for a split set, the training rows
        followed by the test rows) instead of the Bunch.

    Returns
    -------
    Bunch or tuple of ndarray
        A Bunch with ``X, y`` (every example), ``has_split``, ``name`` and
        ``DESCR`` (the source); with ``X_train, y_train, X_test, y_test`` for
        sets with a standard split (``realization`` too for IDA-style ones,
        and ``points`` for the pooled ones); ``feature_names`` where the
        source names them. With ``return_X_y=True``, ``(X, y)``.

    Examples
    --------
    >>> from localsvm.datasets import load_dataset
    >>> d = load_dataset("image", realization=3)
    >>> d.realization, d.X_train.shape, d.X_test.shape
    (3, (1300, 18), (1010, 18))
    """
    if name not in DATASETS:
        raise ValueError(f"unknown data set {name!r}; bundled: {', '.join(list_datasets())}")
    ref = resources.files(__package__).joinpath("data", f"{name}.npz")
    with resources.as_file(ref) as path, np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    out = Bunch(name=name, DESCR=DATASETS[name])
    if "points" in arrays:
        # Pooled storage (see ``_bundle.py``): rebuild each split from row indices.
        points = arrays.pop("points")
        arrays["X_train"] = points[arrays.pop("index_train")]
        arrays["X_test"] = points[arrays.pop("index_test")]
        arrays["y_train"] = arrays["y_train"].astype(np.int64)
        arrays["y_test"] = arrays["y_test"].astype(np.int64)
        out["points"] = points
    if "realizations" in arrays:
        n_real = arrays["X_train"].shape[0]
        r = 0 if realization is None else realization
        if isinstance(r, bool) or not isinstance(r, Integral) or not 0 <= r < n_real:
            raise ValueError(f"realization must be an integer in [0, {n_real}), got {r!r}")
        for key in ("X_train", "y_train", "X_test", "y_test"):
            out[key] = arrays[key][r]
        out["realization"] = int(r)
        return _finish(out, return_X_y)
    if realization is not None:
        raise ValueError(f"data set {name!r} has a single split; realization must be None")
    for key, value in arrays.items():
        out[key] = value
    return _finish(out, return_X_y)


def _finish(out: Bunch, return_X_y: bool) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Give every set the same core fields: ``X, y`` and ``has_split``."""
    out["has_split"] = "X_train" in out
    if out.has_split:
        out["X"] = np.concatenate([out.X_train, out.X_test])
        out["y"] = np.concatenate([out.y_train, out.y_test])
    if return_X_y:
        return out.X, out.y
    return out


_SPLIT_FIELDS = (
    "``X, y`` (training rows, then test rows), ``X_train, y_train, X_test, y_test``, "
    "``has_split`` (True)"
)
_LOADER_DOC = """Load {title}.

    {notes}
    Parameters
    ----------
    {realization_param}
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of the Bunch.

    Returns
    -------
    Bunch or tuple of ndarray
        {returns}

    Examples
    --------
    >>> from localsvm.datasets import load_{short}
    {example}
    """
_REALIZATION_PARAM = """\
realization : int, default=0
    Which of the ten train/test splits to return (0–9)."""


def _loader(
    short: str,
    title: str,
    notes: str,
    fields: str,
    example: str,
    *,
    key: str = "",
    realizations: bool = False,
) -> Callable[..., Bunch | tuple[np.ndarray, np.ndarray]]:
    """Make ``load_<short>``: :func:`load_dataset` for one set, with its own docstring."""
    name = key or short
    if realizations:

        def load(
            realization: int = 0, *, return_X_y: bool = False
        ) -> Bunch | tuple[np.ndarray, np.ndarray]:
            return load_dataset(name, realization=realization, return_X_y=return_X_y)

    else:

        def load(*, return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
            return load_dataset(name, return_X_y=return_X_y)

    load.__name__ = load.__qualname__ = f"load_{short}"
    load.__doc__ = render(
        _LOADER_DOC,
        title=title,
        notes=notes + "\n\n" if notes else "",
        realization_param=_REALIZATION_PARAM if realizations else "",
        returns=textwrap.fill(
            f"{fields}, ``name`` and ``DESCR`` (the source). With ``return_X_y=True``, ``(X, y)``.",
            width=72,
            break_on_hyphens=False,
        ),
        short=short,
        example=example,
    )
    return load


_IDA_FIELDS = _SPLIT_FIELDS + ", ``realization``"
_POOL_FIELDS = _IDA_FIELDS + ", ``points`` (the pool the splits index)"
_NO_SPLIT = "``X``, ``y``, ``has_split`` (False)"
_NAMED = _NO_SPLIT + ", ``feature_names``"
_SHAPES = ">>> d.X_train.shape, d.X_test.shape"
_LABELS = ">>> d.X.shape, sorted(set(d.y.tolist()))"

load_banana = _loader(
    "banana",
    "Banana (IDA): realization ``realization`` of 10, 400 train / 4900 test",
    "Two features, labels −1/+1.",
    _IDA_FIELDS,
    ">>> d = load_banana(realization=1)\n>>> d.X_train.shape, d.X_test.shape, d.realization\n"
    "((400, 2), (4900, 2), 1)",
    realizations=True,
)
load_usps = _loader(
    "usps",
    "the USPS digits: 7291 train / 2007 test, 256 pixels, 10 classes",
    "",
    _SPLIT_FIELDS,
    ">>> d = load_usps()\n>>> d.X_train.shape, d.X_test.shape, len(set(d.y_train))\n"
    "((7291, 256), (2007, 256), 10)",
)
load_ijcnn1 = _loader(
    "ijcnn1",
    "ijcnn1: 49990 train / 91701 test, 22 features, labels −1/+1",
    "",
    _SPLIT_FIELDS,
    f">>> d = load_ijcnn1()\n{_SHAPES}\n((49990, 22), (91701, 22))",
)
load_a9a = _loader(
    "a9a",
    "a9a (UCI Adult): 32561 train / 16281 test, 123 binary features",
    "Labels −1/+1.",
    _SPLIT_FIELDS,
    f">>> d = load_a9a()\n{_SHAPES}\n((32561, 123), (16281, 123))",
)
load_iris = _loader(
    "iris",
    "Iris: 150 examples, 4 features, 3 classes (0–2), no standard split",
    "",
    _NAMED,
    f">>> d = load_iris()\n{_LABELS}\n((150, 4), [0, 1, 2])",
)
load_breast_w = _loader(
    "breast_w",
    "Wisconsin breast cancer (original): 699 examples, 9 features",
    "Labels 0 (benign) and 1 (malignant); no standard split.",
    _NAMED,
    f">>> d = load_breast_w()\n{_LABELS}\n((699, 9), [0, 1])",
)
load_glass = _loader(
    "glass",
    "Glass: 205 examples, 9 features, 5 classes, no standard split",
    "",
    _NAMED,
    f">>> d = load_glass()\n{_LABELS}\n((205, 9), [1, 2, 3, 5, 7])",
)
load_yeast = _loader(
    "yeast",
    "Yeast: 1479 examples, 8 features, 9 classes, no standard split",
    "",
    _NAMED,
    ">>> d = load_yeast()\n>>> d.X.shape, len(set(d.y.tolist()))\n((1479, 8), 9)",
)
load_splice = _loader(
    "splice",
    "Splice (IDA): 3175 examples, 60 features, labels −1/+1",
    "No split is stored.",
    _NO_SPLIT,
    f">>> d = load_splice()\n{_LABELS}\n((3175, 60), [-1, 1])",
)
load_image = _loader(
    "image",
    "Image (IDA): realization ``realization`` of 10, 1300 train / 1010 test",
    "18 features, labels −1/+1.",
    _POOL_FIELDS,
    f">>> d = load_image()\n{_SHAPES}\n((1300, 18), (1010, 18))",
    realizations=True,
)
load_ringnorm = _loader(
    "ringnorm",
    "Ringnorm (IDA): realization ``realization`` of 10, 400 train / 7000 test",
    "20 features, labels −1/+1. ``points`` holds the whole pool of 7400\n"
    "points (its labels are in the union of a realization's ``y_train`` and\n"
    "``y_test``), for splits such as the FLSA paper's 3000 / 4400.",
    _POOL_FIELDS,
    ">>> d = load_ringnorm()\n>>> d.X_train.shape, d.X_test.shape, d.points.shape\n"
    "((400, 20), (7000, 20), (7400, 20))",
    realizations=True,
)
load_diabetis = _loader(
    "diabetis",
    "Diabetis (IDA): realization ``realization`` of 10, 468 train / 300 test",
    "8 features, labels −1/+1: the Pima Indians diabetes data as split by\n"
    "the IDA benchmark collection. ``points`` holds the whole pool of 768\npoints.",
    _POOL_FIELDS,
    f">>> d = load_diabetis()\n{_SHAPES}\n((468, 8), (300, 8))",
    realizations=True,
)
load_two_spirals = _loader(
    "two_spirals",
    "Two spirals: 194 points, 2 features, labels −1/+1",
    "",
    _NO_SPLIT,
    f">>> d = load_two_spirals()\n{_LABELS}\n((194, 2), [-1, 1])",
)
_UNSCALED = "no standard split, features as distributed (not scaled)."
load_segmentation = _loader(
    "segmentation",
    "Image segmentation (StatLog 'segment')",
    f"2310 examples, 19 features, 7 classes (0–6);\n{_UNSCALED}",
    _NO_SPLIT,
    ">>> load_segmentation().X.shape\n(2310, 19)",
)
load_vehicle = _loader(
    "vehicle",
    "Vehicle silhouettes (StatLog)",
    f"846 examples, 18 features, 4 classes (1–4);\n{_UNSCALED}",
    _NO_SPLIT,
    ">>> load_vehicle().X.shape\n(846, 18)",
)
load_waveform = _loader(
    "waveform",
    "Waveform, version 1 (21 features)",
    f"5000 examples, 21 features, 3 classes (0–2);\n{_UNSCALED}",
    _NO_SPLIT,
    ">>> load_waveform().X.shape\n(5000, 21)",
    key="waveform_21",
)
load_heart = _loader(
    "heart",
    "Heart disease (StatLog)",
    f"270 examples, 13 features, 2 classes (0 absent, 1 present);\n{_UNSCALED}",
    _NO_SPLIT,
    ">>> load_heart().X.shape\n(270, 13)",
    key="heart_statlog",
)
