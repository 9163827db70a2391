"""``localsvm bench online`` on a few hundred rows: the printed table holds
the learners, row counts, accuracies and support-vector counts of models
that can be rebuilt here (speed is not asserted)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from localsvm_benchmarks.online import _load, _scale_gamma, run_online
from sklearn.svm import SVC as SklearnSVC

from localsvm import IncrementalSVC


def _table(text: str, data: str) -> dict[str, list[str]]:
    """The rows of ``data``'s table, by learner name."""
    rows = {}
    for line in text.splitlines():
        if line.startswith(f"{data} ") and "SVC" in line:
            name, _, rest = line[len(data) :].strip().partition("  ")
            rows[name.strip()] = rest.split()
    return rows


def test_bench_online_prints_the_models_it_trained(capsys):
    from localsvm.__main__ import main

    main(
        [
            "bench",
            "online",
            "--datasets",
            "a9a,ijcnn1",
            "--n-train",
            "600",
            "--n-test",
            "400",
            "--chunks",
            "1,100",
            "--rebatch-rows",
            "150",
        ]
    )
    out = capsys.readouterr().out
    for data in ("a9a", "ijcnn1"):
        assert f"{data}: 600 training rows in file order, 400 test rows" in out
        rows = _table(out, data)
        assert list(rows) == [
            "sklearn SVC.fit",
            "localsvm SVC.fit",
            "IncrementalSVC chunks of 1",
            "IncrementalSVC chunks of 100",
            "IncrementalSVC rebatch, first 150",
            "IncrementalSVC local, first 150",
        ]
        X, y, Xt, yt = _load(data, 600, 400)
        gamma = _scale_gamma(X)
        # The batch row is scikit-learn's model on these rows: same accuracy
        # and support vectors, and the ratio column's reference.
        ref = SklearnSVC(C=1.0, gamma=gamma).fit(X, y)
        n, _, _, ratio, acc, n_sv = rows["sklearn SVC.fit"]
        assert (n, ratio) == ("600", "1.00")
        assert float(acc) == pytest.approx(100 * ref.score(Xt, yt), abs=0.005)
        assert int(n_sv) == ref.support_.size
        # The one-pass rows are IncrementalSVC's models on the same stream
        # (deterministic: a pass of fit is a pass of partial_fit).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            online = IncrementalSVC(C=1.0, gamma=gamma).fit(X, y)
        for chunk in ("1", "100"):
            cells = rows[f"IncrementalSVC chunks of {chunk}"]
            assert cells[0] == "600" and len(cells) == 9
            assert float(cells[-2]) == pytest.approx(100 * online.score(Xt, yt), abs=0.005)
            assert int(cells[-1]) == online.support_.size
            med, p99 = float(cells[4]), float(cells[5])
            assert 0 < med <= p99
        assert rows["IncrementalSVC rebatch, first 150"][0] == "150"
        # The per-update curve of the one-row pass: windows covering the stream.
        section = out.split(f"{data}: 600")[1]
        assert "one-row partial_fit calls against examples seen" in section
        assert "     0 - 600   " in section


def test_bench_online_returns_the_rows_and_the_curve():
    out = io.StringIO()
    res = run_online(["a9a"], n_train=250, n_test=200, chunks=[1], rebatch_rows=0, out=out)
    assert [r["learner"] for r in res["rows"]] == [
        "sklearn SVC.fit",
        "localsvm SVC.fit",
        "IncrementalSVC chunks of 1",
    ]
    curve = res["curve"]["a9a"]
    assert [(w["start"], w["end"]) for w in curve] == [(0, 250)]
    row = res["rows"][-1]
    assert row["median_ms"] <= row["p99_ms"] and np.isfinite(row["p99_cpu_ms"])
    assert "rebatch" not in out.getvalue()


def test_bench_online_misuse(capsys):
    from localsvm.__main__ import main

    with pytest.raises(ValueError, match="not among"):
        run_online(["usps"], out=io.StringIO())
    with pytest.raises(ValueError, match="chunks must be positive"):
        run_online(["a9a"], chunks=[], out=io.StringIO())
    with pytest.raises(SystemExit):
        main(["bench", "online", "--datasets", "usps"])
    assert "bench online runs on ijcnn1, a9a" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "online", "--chunks", "0"])
    assert "must be at least 1" in capsys.readouterr().err
