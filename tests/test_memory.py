"""Peak memory of every estimator at n = 40 000, against its documented bound.

Each fit runs in a child interpreter (``run_in_child``): the child records
its resident memory after building the data and importing everything
(``base``), fits, and reports its peak (``VmHWM``). The growth ``peak −
base`` must stay within the estimator's documented terms: ``cache_size``,
the data-sized copies (``X`` = 8·n·d bytes) and the documented fixed
blocks, plus 64 MiB for the interpreter's own working memory. Slow (minutes):
run with ``-m slow``.
"""

from __future__ import annotations

import pytest
from localsvm_benchmarks.svc import MEMORY_BYTES_PER_ROW, MEMORY_SLACK_MB

from conftest import run_in_child

pytestmark = pytest.mark.slow

N, D = 40_000, 10
MIB = 1 << 20
X_BYTES = 8 * N * D
SLACK = 64 * MIB

SETUP = f"""
import numpy as np
import localsvm
from localsvm import (
    SVC, LocalSVC, ProfileSVC, FLSAClassifier, RFLSAClassifier, IncrementalSVC, ClusterSVC,
)
rng = np.random.default_rng(0)
n, d = {N}, {D}
X = rng.normal(size=(n, d))
y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, 0)

def rss_mib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

base = rss_mib("VmRSS:")
"""

CASES = {
    # cache_size + the solver's copies of X (f64 rows, f32 panel), the
    # per-example vectors and the shrinking allowance: the bound `bench svc`
    # checks (less the SLACK every case gets).
    "svc": (
        "SVC(cache_size=200).fit(X, y)",
        200 * MIB
        + 2 * X_BYTES
        + int(MEMORY_BYTES_PER_ROW * N)
        + int(MEMORY_SLACK_MB * MIB)
        - SLACK,
    ),
    # LocalSVC's Notes: cache_size + 96 MiB + (1 + 4.5·P)·8·n·d, P = 2 chunks
    # at once; a bandwidth wide enough that every example is in every
    # neighbourhood (the 40 000-variable local problems of the probe). Fit's
    # global SVM (cache_size + O(n·d)) stays under the same bound.
    "local": (
        "LocalSVC(bandwidth=1e4, cache_size=200, chunk_size=4, n_jobs=2).fit(X, y).predict(X[:8])",
        200 * MIB + 96 * MIB + int((1 + 4.5 * 2) * X_BYTES),
    ),
    # ProfileSVC's Notes: about 4 profile-sized arrays of at most
    # PROFILE_AUTO_BYTES (256 MiB), cache_size, the members' copies.
    "profile": (
        "ProfileSVC(clustering='magkmeans-greedy', random_state=0).fit(X, y)",
        4 * 256 * MIB + 200 * MIB + 2 * X_BYTES,
    ),
    # The module's Memory section: the n × m candidate block (m =
    # dictionary_size), the basis 8·n·(n_support + 1), the rows.
    "flsa": (
        "FLSAClassifier(n_support=30, dictionary_size=1000).fit(X, y)",
        8 * N * 1000 + 8 * N * 31 + 2 * X_BYTES,
    ),
    # RFLSA: no candidate block; the basis twice (column-major and in
    # panels of eight rows), the 32 columns orthogonalised together, and the
    # rows copied twice (row- and feature-major).
    "rflsa": (
        "RFLSAClassifier(n_support=100, random_state=0).fit(X, y)",
        2 * 8 * N * 101 + 8 * N * 32 + 3 * X_BYTES,
    ),
    # A slice: the learner keeps the examples it learnt (O(n·d)) and a
    # row cache of cache_size (200 MB).
    "incremental": (
        "IncrementalSVC().fit(X[:5000], y[:5000])",
        200 * MIB + 4 * X_BYTES,
    ),
    # ClusterSVC's Notes: the rows [K(x, R) e] (8·n·D, D = n_columns + 1),
    # plus the kernel block they are copied from (8·n·(D − 1)); per class
    # 16·D² for PᵀP and its factor and 8·n·D for the rows of P and of Q each;
    # 200 MB of backend cache; and the working set's Hessian, 8·|S|² with
    # |S| "a little more than the class's non-zero α" (taken as 1.25 × its
    # support vectors, read off the fitted model).
    "cluster": (
        "est = ClusterSVC(n_columns=500, n_jobs=1, random_state=0).fit(X, y)\n"
        "EXTRA = 8 * (1.25 * est.n_support_.max()) ** 2",
        8 * N * 501 + 8 * N * 500 + 16 * 501 * 501 + 2 * 8 * N * 501 + 200 * MIB + 2 * X_BYTES,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_peak_memory_within_the_documented_bound(name):
    code, bound = CASES[name]
    res = run_in_child(
        SETUP
        + "EXTRA = 0\n"
        + code
        + "\nRESULT = {'base': base, 'peak': rss_mib('VmHWM:'), 'extra': EXTRA}\n",
        timeout=1800,
    )
    assert res["returncode"] == 0, f"the child died: {res['returncode']} {res['stderr']}"
    assert res["error"] is None, res
    growth = (res["value"]["peak"] - res["value"]["base"]) * MIB
    bound += res["value"]["extra"]  # terms that depend on the fitted model
    print(
        f"{name}: base {res['value']['base']:.0f} MiB, peak {res['value']['peak']:.0f} MiB, "
        f"growth {growth / MIB:.0f} MiB, bound {(bound + SLACK) / MIB:.0f} MiB"
    )
    assert growth <= bound + SLACK, (name, growth / MIB, (bound + SLACK) / MIB)
