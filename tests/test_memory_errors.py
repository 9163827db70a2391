"""Sizes the machine cannot hold are a ``MemoryError`` naming the parameter
that avoids them, never an abort.

Each case runs in a child interpreter under ``RLIMIT_AS`` (2 GiB of address
space, a small machine): a regression aborts the child, not pytest, and the
test sees the signal in the return code. The full-size peak-memory checks are
the slow ``test_memory.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import localsvm._memory as memory
from conftest import run_in_child
from localsvm import LocalSVC, ProfileSVC

LIMIT = 2 << 30

SETUP = """
import numpy as np
rng = np.random.default_rng(0)
n = 30000
X = rng.normal(size=(n, 3))
y = np.where(X[:, 0] > 0, 1, 0)
"""


def _expect_memory_error(code: str, *needles: str) -> str:
    res = run_in_child(SETUP + code, address_limit=LIMIT, timeout=300)
    assert res["returncode"] == 0, f"the child died: {res['returncode']} {res['stderr']}"
    assert res["error"] == "MemoryError", res
    for needle in needles:
        assert needle in res["message"], res["message"]
    return res["message"]


def test_core_kernel_matrix_too_large_is_a_memory_error():
    # The core's own check: nothing in Python estimates this size first.
    msg = _expect_memory_error(
        "from localsvm import _core\n_core.kernel_matrix(X, X, kernel=_core.Kernel('rbf'))",
        "the 30000 × 30000 kernel matrix",
        "GiB",
    )
    assert "6.71 GiB" in msg


def test_core_flsa_block_too_large_names_on_the_fly():
    _expect_memory_error(
        "from localsvm import _core\n"
        "_core.flsa_path(X, np.where(y == 1, 1.0, -1.0), np.arange(n),\n"
        "                options=_core.FLSAOptions(gram=_core.FLSAGram.PRECOMPUTED))",
        "30000 × 30000 kernel matrix",
        "gram='on_the_fly'",
    )


def test_flsa_precomputed_too_large_is_refused_up_front():
    _expect_memory_error(
        "from localsvm import FLSAClassifier\nFLSAClassifier(gram='precomputed').fit(X, y)",
        "block of candidate columns",
        "gram='on_the_fly'",
        "dictionary_size",
    )


def test_flsa_auto_takes_the_bounded_path():
    code = (
        "from localsvm import FLSAClassifier\n"
        "clf = FLSAClassifier(n_support=3, kernel='linear').fit(X[:9000], y[:9000])\n"
        "RESULT = clf.gram_\n"
    )
    # 9000 × 9000 × 8 bytes (618 MiB) is under GRAM_AUTO_BYTES but over half
    # of what the limit leaves: 'auto' must evaluate columns on the fly.
    res = run_in_child(SETUP + code, address_limit=LIMIT // 2 + (300 << 20), timeout=300)
    assert res["returncode"] == 0, res["stderr"]
    assert res["error"] is None, res
    assert res["value"] == "on_the_fly"


def test_profile_svc_too_many_landmarks_is_refused_up_front():
    _expect_memory_error(
        "from localsvm import ProfileSVC\nProfileSVC(n_landmarks=n).fit(X, y)",
        "30000 × 30000 similarity profiles",
        "n_landmarks",
    )


def test_profile_svc_default_bounds_its_references(monkeypatch):
    from localsvm import profile_svm

    # A small automatic size stands in for the 256 MiB one (n ≤ 5792).
    monkeypatch.setattr(profile_svm, "PROFILE_AUTO_BYTES", 8 * 400 * 400)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 2))
    y = (X[:, 0] > 0).astype(int)
    # Above the automatic size the default draws landmarks instead of
    # measuring an n × n profile matrix.
    clf = ProfileSVC(n_clusters=2, clustering="kmeans", random_state=0).fit(X, y)
    assert clf.references_.shape[0] == 8 * 400 * 400 // (8 * 1000)
    small = ProfileSVC(n_clusters=2, clustering="kmeans", random_state=0).fit(X[:400], y[:400])
    assert small.references_.shape[0] == 400
    assert np.mean(clf.predict(X[:300]) == y[:300]) > 0.9


def test_check_memory_names_the_object_and_the_parameter(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)
    memory.check_memory(0.4 * (1 << 30), "a small thing", "unused")
    with pytest.raises(MemoryError, match=r"the big thing needs 0\.75 GiB.*use a smaller k"):
        memory.check_memory(0.75 * (1 << 30), "the big thing", "use a smaller k")
    monkeypatch.setattr(memory, "available_memory", lambda: None)
    memory.check_memory(1e18, "anything", "unused")  # unknown: no refusal


def test_available_memory_is_known_here():
    avail = memory.available_memory()
    assert avail is None or avail > 0


def test_local_cache_size_bounds_memory_not_the_result(banana):
    X, y = banana.X_train, banana.y_train
    Q = banana.X_test[:40]
    wide = dict(C=10.0, bandwidth=50.0, kernel="rbf", gamma=1.0, tol=1e-6)
    big = LocalSVC(**wide).fit(X, y)
    tiny = LocalSVC(**wide, cache_size=0.001).fit(X, y)
    assert not big.use_gram_ or big.use_gram_ == tiny.use_gram_
    np.testing.assert_allclose(
        tiny.decision_function(Q), big.decision_function(Q), rtol=1e-4, atol=1e-4
    )
    with pytest.raises(ValueError, match="cache_size"):
        LocalSVC(cache_size=0).fit(X, y)


def test_local_cache_size_reaches_the_core(monkeypatch, banana):
    from localsvm import _core

    seen = []
    real = _core.solve_local

    def spy(*args, **kwargs):
        seen.append(kwargs["settings"].cache_size)
        return real(*args, **kwargs)

    monkeypatch.setattr(_core, "solve_local", spy)
    clf = LocalSVC(cache_size=8.0, chunk_size=10, n_jobs=2).fit(banana.X_train, banana.y_train)
    assert seen and set(seen) == {4.0}  # the anchors' local problems, two chunks at a time
    seen.clear()
    clf.predict(banana.X_test[:40])
    # Four chunks, two at a time: each gets half of the budget.
    assert seen == [4.0] * 4


@pytest.mark.slow
def test_local_fits_and_predicts_50000_examples_within_cache_size_plus_data():
    """Above the Gram limit LocalSVC holds nothing of size n²: the global and
    local problems read kernel columns through the bounded column cache, so
    n = 50 000 fits and predicts under a 1.5 GiB address-space limit (the
    50 000 × 50 000 Gram alone would need 18.6 GiB)."""
    code = (
        "import numpy as np\n"
        "from localsvm import LocalSVC\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(50000, 3))\n"
        "y = np.where(X[:, 0] + 0.3 * rng.normal(size=50000) > 0, 1, 0)\n"
        "clf = LocalSVC(C=1.0, bandwidth=1e4, cache_size=100, n_jobs=1).fit(X, y)\n"
        "Q = rng.normal(size=(3, 3))\n"
        "d = clf.decision_details(Q)\n"
        "RESULT = {'use_gram': bool(clf.use_gram_), 'n_active': d.n_active[:, 0].tolist(),\n"
        "          'status': d.status[:, 0].tolist(), 'pred': clf.predict(Q).tolist()}\n"
    )
    res = run_in_child(code, address_limit=3 << 29, timeout=1200)
    assert res["returncode"] == 0, f"the child died: {res['returncode']} {res['stderr']}"
    assert res["error"] is None, res
    value = res["value"]
    assert value["use_gram"] is False
    assert value["n_active"] == [50000] * 3  # every example in every local problem
    assert value["status"] == [0, 0, 0]
    assert set(value["pred"]) <= {0, 1}
