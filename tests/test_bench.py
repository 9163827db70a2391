"""The benchmark command's machinery, on small data (speed is not asserted)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from localsvm_benchmarks import svc as bench
from localsvm_benchmarks.svc import make_estimator, run_bench
from sklearn.svm import SVC as SklearnSVC

from localsvm import SVC
from localsvm._objective import libsvm_dual_objectives
from localsvm.datasets import load_iris
from localsvm.kernels import KernelSpec, resolve_gamma


def test_bench_table_compares_like_with_like():
    out = io.StringIO()
    res = run_bench(["banana"], ["localsvm", "sklearn"], scaling_sizes=None, out=out)
    rows = {r["peer"]: r for r in res["rows"]}
    assert set(rows) == {"localsvm", "sklearn"}
    assert rows["localsvm"]["objective"] == pytest.approx(rows["sklearn"]["objective"], rel=1e-4)
    assert abs(rows["localsvm"]["accuracy"] - rows["sklearn"]["accuracy"]) < 0.005
    text = out.getvalue()
    # localsvm's kernel evaluations, at least the floor n_SV · n (every
    # support vector's column once); the peers have no count.
    ours = rows["localsvm"]
    assert ours["kernel_evals"] >= ours["kernel_floor"] >= ours["n_sv"] > 0
    assert rows["sklearn"]["kernel_evals"] is None
    for m in res["memory"]:
        assert m["extra_mb"] <= m["bound_mb"]
    # The float64 prediction row: timed, and its labels against the fit's.
    assert ours["predict64_s"] > 0 and ours["precision"] in ("float32", "float64")
    assert 0 <= ours["labels_changed_64"] <= 0.01 * ours["n_test"]
    section = text.split("localsvm prediction in float64:")[1]
    line = next(x for x in section.splitlines() if x.startswith("banana")).split()
    assert line[1] == ours["precision"]
    assert float(line[3]) == pytest.approx(ours["predict64_s"], abs=1e-3)
    # The kernel arithmetic rate: localsvm's kernel values times 2·d flops
    # over its fit time, printed in GFlop/s and as a share of the sgemm rate
    # measured in the same run.
    assert res["sgemm_gflops"] > 0
    # Timed before and after the fits, the better kept.
    assert len(res["sgemm_runs"]) == 2 and res["sgemm_gflops"] == max(res["sgemm_runs"])
    rate = text.split("localsvm kernel arithmetic during fit:")[1]
    assert f"{res['sgemm_gflops']:.1f} GFlop/s" in rate
    line = next(x for x in rate.splitlines() if x.startswith("banana")).split()
    # The fit's rate and its share of the product's, as printed (one decimal:
    # a fit slowed by a loaded machine may print a share of 0.0 %).
    fit_rate = float(line[-4])
    assert fit_rate > 0
    share = float(line[-3].rstrip("%"))
    assert share == pytest.approx(100 * fit_rate / res["sgemm_gflops"], abs=0.06)
    # And against a float32 product of the kernel columns' shape, timed in
    # the same run.
    panel = ours["panel_gflops"]
    assert panel > 0
    assert float(line[-2]) == pytest.approx(panel, rel=0.01, abs=0.006)


def test_the_shape_product_is_timed_before_and_after_the_fits(monkeypatch):
    # The better of the two timings is kept, whichever came first.
    for timings, kept in (([5.0, 7.0], 7.0), ([9.0, 4.0], 9.0), ([None, None], None)):
        calls = iter(timings)
        monkeypatch.setattr(bench, "panel_product_rate", lambda n, d, it=calls: next(it))
        rows = bench.run_case(bench.CASES["banana"], ["localsvm"], 1, io.StringIO())
        assert rows[0]["panel_gflops"] == kept
        assert next(calls, "spent") == "spent"


def test_panel_product_rate_follows_the_shape_and_refuses_huge_operands():
    assert bench.panel_product_rate(3000, 7, columns=64, repeat=1) > 0
    # More rows than one piece: every piece is multiplied.
    assert bench.panel_product_rate(bench.PANEL_PIECE_ROWS + 5, 3, columns=8, repeat=1) > 0
    assert bench.panel_product_rate(10**9, 10**3) is None
    assert bench.panel_product_rate(0, 5) is None
    out = io.StringIO()
    row = {
        "peer": "localsvm",
        "data": "toy",
        "n_train": 100,
        "n_features": 4,
        "kernel_evals": 10**6,
        "kernel_floor": 5 * 10**5,
        "fit_s": 0.5,
        "panel_gflops": None,
    }
    bench.print_rate_table([row], 100.0, out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("toy")).split()
    assert line[-2:] == ["—", "—"]


def test_case_parameters_override_the_common_ones():
    # The generated problems ask for a larger kernel cache than the
    # common 200 MB; the other settings stay the common ones.
    est, _ = make_estimator("localsvm", bench.CASES["gen200k"].params)
    assert est.cache_size == 2000 and est.tol == 1e-3 and est.kernel == "rbf"
    est, _ = make_estimator("localsvm", bench.CASES["ijcnn1"].params)
    assert est.cache_size == 200


def test_missing_peers_are_skipped_with_a_reason():
    est, why = make_estimator("thundersvm", {"C": 1.0, "gamma": 1.0})
    if est is None:
        assert why
    with pytest.raises(ValueError, match="unknown peer"):
        make_estimator("libsvm-3", {})


def test_scaling_exponent():
    out = io.StringIO()
    res = run_bench(
        ["banana"], ["localsvm"], scaling_sizes=[1000, 2000], memory_check=False, out=out
    )
    assert set(res["exponents"]) == {"localsvm"}
    assert np.isfinite(res["exponents"]["localsvm"])
    assert "fitted exponent" in out.getvalue()


def test_one_scaling_size_fits_no_exponent():
    out = io.StringIO()
    res = run_bench(["banana"], ["localsvm"], scaling_sizes=[500], memory_check=False, out=out)
    assert res["exponents"] == {}
    assert "needs two sizes or more" in out.getvalue()


def test_unknown_dataset():
    with pytest.raises(ValueError, match="unknown data sets"):
        run_bench(["nope"], ["localsvm"], memory_check=False, out=io.StringIO())


def test_libsvm_objectives_match_ours_per_pair():
    d = load_iris()
    ours = SVC(C=2.0, tol=1e-8).fit(d.X, d.y)
    theirs = SklearnSVC(C=2.0, tol=1e-8).fit(d.X, d.y)
    spec = KernelSpec("rbf", gamma=resolve_gamma("scale", d.X))
    want = ours.dual_objective_
    np.testing.assert_allclose(libsvm_dual_objectives(theirs, spec), want, rtol=1e-6)
    np.testing.assert_allclose(libsvm_dual_objectives(ours, spec), want, rtol=1e-6)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--datasets", "foo"], "unknown data set 'foo'; choose from ijcnn1, a9a, usps, banana"),
        (["--datasets", ","], "name at least one data set"),
        (["--peers", "libsvm"], "unknown peer 'libsvm'; choose from localsvm, sklearn"),
        (["--repeat", "0"], "must be at least 1, got 0"),
        (["--repeat", "two"], "expected a whole number, got 'two'"),
        (["--scaling", "100,x"], "expected whole numbers, got 'x'"),
    ],
)
def test_cli_misuse_is_a_usage_error(args, message, capsys):
    from localsvm.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", *args])
    assert exit_info.value.code == 2  # argparse's usage-error status, no traceback
    err = capsys.readouterr().err
    assert err.startswith("usage: localsvm bench")
    assert message in err


def test_cli_names_match_the_bench_tables():
    from localsvm_benchmarks import __main__ as cli
    from localsvm_benchmarks import svc as bench

    assert cli.BENCH_DATASETS == tuple(bench.CASES)
    assert cli.BENCH_PEERS == bench.PEERS


def test_bench_local_on_a_small_split(capsys):
    from localsvm_benchmarks.svc import local_split

    from localsvm.__main__ import main

    X, _, Xt, _ = local_split(600, 300)
    assert X.shape == (600, 22) and Xt.shape == (300, 22)
    # The split is fixed: the same rows again, and train and test disjoint.
    X2, _, Xt2, _ = local_split(600, 300)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(Xt, Xt2)
    assert not (X[:, None, :] == Xt[None, :, :]).all(axis=2).any()
    main(["bench", "local", "--n-train", "600", "--n-test", "300", "--kappas", "2,4"])
    out = capsys.readouterr().out
    ours = ("localsvm SVC", "localsvm ProfileSVC")
    rows = [ln.split() for ln in out.splitlines() if ln.startswith(ours)]
    assert [r[1] for r in rows] == ["SVC", "ProfileSVC", "ProfileSVC"]
    assert [r[2] for r in rows[1:]] == ["2", "4"]
    accuracies = [float(next(v for v in r if v.endswith("%"))[:-1]) for r in rows]
    assert all(70.0 < a <= 100.0 for a in accuracies)
    assert "600 train / 300 test" in out
    with pytest.raises(ValueError, match="n_train must be in"):
        local_split(200_000)


def test_bench_local_misuse_is_a_usage_error(capsys):
    from localsvm.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "nope"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "local", "--n-train", "0"])
    assert "must be at least 1" in capsys.readouterr().err


def test_sparse_bench_runs_small_cases():
    from localsvm_benchmarks.sparse import run_sparse_bench

    out = io.StringIO()
    res = run_sparse_bench(["a9a"], ["localsvm", "sklearn"], n_train=300, wide_rows=300, out=out)
    by = {r["implementation"]: r for r in res["rows"]}
    # a9a stores 11 % of its entries: dense-like, so the sums over stored
    # entries are timed as a row of their own.
    assert set(by) == {"localsvm CSR", "localsvm CSR rows", "localsvm dense", "sklearn CSR"}
    # The same model whichever input form: same support-vector count and accuracy.
    assert len({r["n_sv"] for r in by.values()}) == 1
    assert by["localsvm CSR"]["accuracy"] == pytest.approx(by["sklearn CSR"]["accuracy"], abs=0.01)
    for m in res["memory"]:
        assert m["extra_mb"] <= m["bound_mb"]
    assert res["wide"]["n"] == 300 and res["wide"]["d"] == 100_000
    text = out.getvalue()
    assert "sklearn CSR" in text and "wide sparse set" in text


def test_sparse_bench_refuses_other_data_sets(capsys):
    from localsvm_benchmarks.sparse import run_sparse_bench

    from localsvm.__main__ import main

    with pytest.raises(ValueError, match="unknown data sets"):
        run_sparse_bench(["usps"], ["localsvm"], out=io.StringIO())
    with pytest.raises(SystemExit):
        main(["bench", "sparse", "--datasets", "usps"])
    assert "bench sparse runs on a9a, ijcnn1" in capsys.readouterr().err


def test_bench_scale_on_small_sizes(capsys):
    from localsvm.__main__ import main

    main(
        [
            "bench",
            "scale",
            "--sizes",
            "1500,3000",
            "--n-test",
            "1000",
            "--max-global",
            "2000",
            "--no-ijcnn1",
            "--peers",
            "localsvm,sklearn",
        ]
    )
    out = capsys.readouterr().out
    tables = out.split("generated n=")[1:]
    assert len(tables) == 2
    small, large = tables
    # Up to --max-global rows the global solvers run; above, only the cells
    # and the baseline.
    for name in ("localsvm CellSVC", "partition baseline", "localsvm SVC ", "init='cells'"):
        assert name in small
    assert "localsvm SVC " not in large and "init='cells'" not in large
    assert "scikit-learn SVC" in small

    def row(table, name):
        line = next(ln for ln in table.splitlines() if ln.strip().startswith(name) and "%" in ln)
        return line.split()

    # The exact mode reaches the global SVC's objective; the cells have none.
    glob = row(small, "localsvm SVC ")
    exact = row(small, "localsvm SVC init='cells'")
    obj = [float(v) for v in (glob[-3], exact[-3])]
    assert obj[1] == pytest.approx(obj[0], rel=1e-3)
    assert row(small, "localsvm CellSVC")[-3] == "—"
    # Under the table: exact mode's fit time over the plain fit's, as printed.
    note = next(ln for ln in small.splitlines() if ln.strip().startswith("exact mode"))
    ratio = float(note.split("fit ")[1].split("×")[0])
    assert ("not faster than" in note) == (ratio >= 1)
    accuracy = float(next(v for v in row(large, "localsvm CellSVC") if v.endswith("%"))[:-1])
    assert 70.0 < accuracy <= 100.0


def test_bench_family_rows_and_the_sklearnex_columns(monkeypatch):
    """``bench family`` on small sets: one row per estimator with figures,
    models that agree with scikit-learn's, and sklearnex's columns exactly
    when it is importable (a dash for OneClassSVM, which it lacks)."""
    from localsvm_benchmarks import family as bench_family

    for importable in (True, False):
        if not importable:
            monkeypatch.setattr(bench_family, "_sklearnex_svm", lambda: None)
        elif bench_family._sklearnex_svm() is None:
            continue
        out = io.StringIO()
        rows = bench_family.run_family(n_train=500, out=out, n_one_class=500, repeat=2)
        text = out.getvalue()
        names = [r["estimator"] for r in rows]
        assert names == ["SVR", "NuSVR", "OneClassSVM", "NuSVC", "NuSVC"]
        for r in rows:
            assert r["fit"] > 0 and r["fit_sklearn"] > 0 and r["predict"] > 0
            if r["estimator"] in ("SVR", "NuSVR"):
                assert r["agreement"] <= 1e-2  # max |Δprediction| / std(y)
            else:
                assert r["agreement"] >= 0.99  # equal labels
            has = importable and r["estimator"] != "OneClassSVM"
            assert (r["fit_sklearnex"] is not None) == has
            assert (r["predict_sklearnex"] is not None) == has
        header = next(ln for ln in text.splitlines() if ln.startswith("estimator"))
        assert ("sklearnex" in header) == importable
        assert ("not importable" in text) == (not importable)
        assert "best of 2 run(s) per timing" in text


def test_bench_engines_says_what_it_needs_without_the_dask_plugin(monkeypatch, capsys):
    from localsvm_benchmarks import __main__ as cli

    monkeypatch.setattr(cli, "list_engines", lambda: ["serial", "threads", "joblib"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["engines"])
    assert exit_info.value.code == 2
    assert "plugins/localsvm-dask" in capsys.readouterr().err


def test_local_defaults_bench_compares_the_two_defaults():
    from localsvm_benchmarks.local_defaults import load, run_local_defaults

    from localsvm import ProfileSVC

    out = io.StringIO()
    rows = run_local_defaults(["generated:12000", "banana"], n_test=300, out=out)
    text = out.getvalue()
    assert [r["data"] for r in rows] == ["generated:12000", "banana"]
    gen, banana = rows
    # 12 000 rows: two clusters, routed by the nearest clustering centre.
    assert gen["n"] == 12000 and gen["n_clusters"] == 2 and gen["routing"] == "centroid"
    X, y, Xt, yt = load("generated:12000", 300)
    want = ProfileSVC(kernel="rbf", random_state=0).fit(X, y).score(Xt, yt)
    assert gen["profile"] == pytest.approx(want)
    want = SVC().fit(X, y).score(Xt, yt)
    assert gen["svc"] == pytest.approx(want)
    # One cluster: the global SVM itself.
    assert banana["n_clusters"] == 1 and banana["profile"] == banana["svc"]
    assert "generated:12000" in text and "banana" in text


def test_fixed_cost_bench_splits_the_fit_time():
    from localsvm_benchmarks.fixed_cost import run_fixed_cost, solver_clock

    from localsvm import _core
    from localsvm.backends import rust

    out = io.StringIO()
    rows = run_fixed_cost(1, out, n_many=260)
    assert [r["fit"] for r in rows] == ["NuSVC 2 000", "NuSVR 5 000", "SVC 26 classes 260"]
    for r in rows:
        # The solver's time is part of the fit's.
        assert 0.0 < r["solver"] <= r["localsvm"] and r["sklearn"] > 0.0
    # The clock is removed afterwards, even when the block raises.
    with pytest.raises(RuntimeError), solver_clock():
        raise RuntimeError
    assert rust._core is _core
    assert "sklearn / localsvm" in out.getvalue()


def test_routing_bench_labels_one_model_by_each_rule():
    from localsvm_benchmarks.local_defaults import load
    from localsvm_benchmarks.routing import run_routing

    from localsvm import CellSVC

    out = io.StringIO()
    (row,) = run_routing(["generated:12000"], n_test=2000, cell_size=3000, out=out)
    X, y, Xt, yt = load("generated:12000", 2000)
    soft = CellSVC(cell_size=3000, random_state=0).fit(X, y)
    hard = CellSVC(cell_size=3000, routing="hard", random_state=0).fit(X, y)
    assert row["cells"] == soft.n_cells_ > 1
    assert row["soft"] == pytest.approx(soft.score(Xt, yt))
    assert row["hard"] == pytest.approx(hard.score(Xt, yt))
    # The reach only takes blending away: fewer rows blend than without it.
    assert 0 < row["blend_soft"] <= row["blend_log"] <= 1
    assert "generated:12000" in out.getvalue()


def test_exact_note_words_follow_the_printed_ratio():
    from localsvm_benchmarks.scale import exact_note

    at_one = exact_note(0.998)
    assert "1.00×" in at_one and "not faster than" in at_one
    below = exact_note(0.994)
    assert "0.99×" in below and "not faster than" not in below and "faster than" in below
    assert "not faster than" in exact_note(1.2)
