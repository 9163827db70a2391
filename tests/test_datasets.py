"""The bundled data sets load with the documented shapes, labels and splits."""

from __future__ import annotations

import numpy as np
import pytest

from localsvm import datasets


@pytest.mark.parametrize(
    ("name", "shapes", "labels"),
    [
        ("banana", {"X_train": (400, 2), "X_test": (4900, 2)}, {-1, 1}),
        ("usps", {"X_train": (7291, 256), "X_test": (2007, 256)}, set(range(10))),
        ("ijcnn1", {"X_train": (49990, 22), "X_test": (91701, 22)}, {-1, 1}),
        ("a9a", {"X_train": (32561, 123), "X_test": (16281, 123)}, {-1, 1}),
        ("iris", {"X": (150, 4)}, {0, 1, 2}),
        ("breast_w", {"X": (699, 9)}, {0, 1}),
        ("glass", {"X": (205, 9)}, {1, 2, 3, 5, 7}),
        ("yeast", {"X": (1479, 8)}, set(range(9))),
        ("splice", {"X": (3175, 60)}, {-1, 1}),
        ("two_spirals", {"X": (194, 2)}, {-1, 1}),
        ("image", {"X_train": (1300, 18), "X_test": (1010, 18)}, {-1, 1}),
        ("ringnorm", {"X_train": (400, 20), "X_test": (7000, 20)}, {-1, 1}),
        ("diabetis", {"X_train": (468, 8), "X_test": (300, 8)}, {-1, 1}),
        ("segmentation", {"X": (2310, 19)}, set(range(7))),
        ("vehicle", {"X": (846, 18)}, {1, 2, 3, 4}),
        ("waveform_21", {"X": (5000, 21)}, {0, 1, 2}),
        ("heart_statlog", {"X": (270, 13)}, {0, 1}),
    ],
)
def test_shapes_and_labels(name, shapes, labels):
    d = datasets.load_dataset(name)
    for key, shape in shapes.items():
        assert d[key].shape == shape
        assert np.all(np.isfinite(d[key]))
    y = d.y_train if "y_train" in d else d.y
    assert set(np.unique(y).tolist()) == labels
    assert d.DESCR == datasets.DATASETS[name]


def test_every_bundled_set_is_listed_and_loads():
    assert datasets.list_datasets() == sorted(datasets.DATASETS)
    for name in datasets.list_datasets():
        assert datasets.load_dataset(name).name == name


def test_realizations_differ():
    a = datasets.load_banana(0)
    b = datasets.load_banana(9)
    assert a.realization == 0 and b.realization == 9
    assert not np.array_equal(a.X_train, b.X_train)


@pytest.mark.parametrize("bad", [-1, 10, 1.5, True])
def test_bad_realization(bad):
    with pytest.raises(ValueError, match="realization"):
        datasets.load_dataset("banana", realization=bad)


def test_realization_on_a_single_split_set():
    with pytest.raises(ValueError, match="single split"):
        datasets.load_dataset("usps", realization=1)


def test_unknown_name_lists_the_bundled_sets():
    with pytest.raises(ValueError, match="unknown data set 'nope'; bundled: a9a, banana"):
        datasets.load_dataset("nope")


@pytest.mark.parametrize("name", ["ringnorm", "image", "diabetis"])
def test_pooled_sets_rebuild_every_realization_from_one_pool(name):
    pool = datasets.load_dataset(name).points
    seen = set()
    for r in (0, 1):
        d = datasets.load_dataset(name, realization=r)
        both = np.concatenate([d.X_train, d.X_test])
        # Every split row is a pool row, and a split covers the whole pool.
        assert np.unique(both, axis=0).shape[0] == pool.shape[0]
        assert d.y_train.dtype == np.int64
        seen.add(d.X_train[:5].tobytes())
    assert len(seen) == 2


@pytest.mark.parametrize("name", datasets.list_datasets())
def test_every_set_has_the_same_core_fields(name):

    d = datasets.load_dataset(name)
    assert {"X", "y", "has_split", "name", "DESCR"} <= set(d)
    assert d.X.ndim == 2 and d.y.shape == (d.X.shape[0],)
    if d.has_split:
        np.testing.assert_array_equal(d.X, np.concatenate([d.X_train, d.X_test]))
        np.testing.assert_array_equal(d.y, np.concatenate([d.y_train, d.y_test]))
    else:
        assert "X_train" not in d
    X, y = datasets.load_dataset(name, return_X_y=True)
    np.testing.assert_array_equal(X, d.X)
    np.testing.assert_array_equal(y, d.y)


def test_every_loader_takes_return_X_y():

    loaders = [getattr(datasets, n) for n in datasets.__all__ if n.startswith("load_")]
    for load in loaders:
        if load is datasets.load_dataset:
            continue
        X, y = load(return_X_y=True)
        assert X.shape[0] == y.shape[0] > 0, load.__name__
