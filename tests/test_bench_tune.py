"""``localsvm bench tune`` on tiny cases: the routes, the table, the options
and the liquidSVM loader (speed is not asserted)."""

from __future__ import annotations

import io
import sys
import sysconfig

import numpy as np
import pytest
from localsvm_benchmarks import tune
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import GridSearchCV

from localsvm import SVC
from localsvm.kernels import resolve_gamma

TINY = {"grid": (2, 2), "n_folds": 2, "n_test": 400, "svr_rows": 0}


def _table_line(text: str, data: str, route: str) -> str:
    return next(
        ln for ln in text.splitlines() if ln.startswith(data) and tune.ROUTE_NAMES[route] in ln
    )


class _GridSVCCV(ClassifierMixin, BaseEstimator):
    """A stand-in with SVCCV's interface: GridSearchCV over localsvm's SVC."""

    def __init__(self, Cs=10, gammas=10, cv=5, n_jobs=None):
        self.Cs, self.gammas, self.cv, self.n_jobs = Cs, gammas, cv, n_jobs

    def fit(self, X, y):
        Cs = self.Cs if not isinstance(self.Cs, int) else [1.0, 10.0]
        gammas = self.gammas if not isinstance(self.gammas, int) else ["scale"]
        gs = GridSearchCV(SVC(), {"C": Cs, "gamma": gammas}, cv=self.cv).fit(X, y)
        self.best_score_ = gs.best_score_
        self.C_ = gs.best_params_["C"]
        gamma = gs.best_params_["gamma"]
        self.gamma_ = resolve_gamma(gamma, X) if isinstance(gamma, str) else gamma
        self.best_estimator_ = gs.best_estimator_
        return self

    def predict(self, X):
        return self.best_estimator_.predict(X)


def test_the_grid_follows_the_data_scale():
    X, y, Xt, _ = tune.load_case("a9a", 300, 200)
    assert X.shape == (300, 123) and Xt.shape == (200, 123)
    Cs, gammas = tune.make_grid(X, (10, 10))
    assert Cs[0] == pytest.approx(0.1) and Cs[-1] == pytest.approx(1000.0)
    np.testing.assert_allclose(np.diff(np.log10(Cs)), 4 / 9)
    scale = resolve_gamma("scale", X)
    assert tune.gamma_scale(X) == pytest.approx(scale)
    assert gammas[0] == pytest.approx(0.01 * scale) and gammas[-1] == pytest.approx(10**1.5 * scale)
    np.testing.assert_allclose(np.diff(np.log10(gammas)), 3.5 / 9)
    # The same rows each time, standardized on the training rows.
    X2, y2, _, _ = tune.load_case("a9a", 300, 200)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    varying = X.std(axis=0) > 0
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0)[varying], 1.0)
    # More rows than the set has: all of them, and all of its test split.
    Xa, _, Xta, _ = tune.load_case("usps", 10**6)
    assert Xa.shape[0] == 7291 and Xta.shape[0] == 2007
    # The folds: stratified, shuffled, the same splits at every call.
    folds = [list(map(tuple, s)) for s in tune.make_folds(5).split(X, y)]
    again = [list(map(tuple, s)) for s in tune.make_folds(5).split(X, y)]
    assert len(folds) == 5 and folds == again


def test_grid_search_routes_agree_on_a_tiny_case(monkeypatch):
    monkeypatch.setattr(tune, "load_cv_estimator", lambda name: (None, f"no {name} here"))
    out = io.StringIO()
    res = tune.run_tune(["a9a"], [300], ["localsvm", "sklearn"], out=out, **TINY)
    rows = {r["route"]: r for r in res["classification"]}
    assert set(rows) == {"localsvm", "sklearn"}
    Cs, gammas = tune.make_grid(tune.load_case("a9a", 300, 400)[0], (2, 2))
    for r in rows.values():
        assert r["n"] == 300 and r["grid"] == "2×2"
        assert r["C"] in Cs and r["gamma"] == pytest.approx(
            min(gammas, key=lambda g: abs(g - r["gamma"]))
        )
        assert 0.6 < r["cv_score"] <= 1.0 and 0.6 < r["accuracy"] <= 1.0
    # localsvm's and LIBSVM's searches see the same folds and grid.
    assert rows["localsvm"]["cv_score"] == pytest.approx(rows["sklearn"]["cv_score"], abs=0.02)
    text = out.getvalue()
    assert "skipping SVCCV: no SVCCV here" in text
    line = _table_line(text, "a9a", "localsvm").split()
    assert f"{100 * rows['localsvm']['accuracy']:.2f}%" in line


def test_ratios_and_differences_against_svccv(monkeypatch):
    # SVCCV's interface on a stand-in: the table's ratio and difference
    # columns are computed from the rows of the same run.
    monkeypatch.setattr(
        tune, "load_cv_estimator", lambda name: (_GridSVCCV, "") if name == "SVCCV" else (None, "")
    )
    monkeypatch.setattr(
        tune, "load_liquidsvm", lambda: (None, "not installed (pip install liquidsvm)")
    )
    out = io.StringIO()
    res = tune.run_tune(["ijcnn1"], [400], ["localsvm", "liquidsvm"], out=out, **TINY)
    rows = {r["route"]: r for r in res["classification"]}
    assert set(rows) == {"svccv", "localsvm", "svccv-own"}
    base, peer = rows["svccv"], rows["localsvm"]
    # The stand-in runs the same search as the GridSearchCV route.
    assert (peer["C"], peer["gamma"]) == (base["C"], base["gamma"])
    assert peer["cv_score"] == pytest.approx(base["cv_score"])
    text = out.getvalue()
    line = _table_line(text, "ijcnn1", "localsvm")
    ratio = next(v for v in line.split() if v.endswith("×"))
    assert float(ratio[:-1]) == pytest.approx(peer["time_s"] / base["time_s"], abs=0.051)
    assert "+0.0000" in line or "-0.0000" in line
    assert "skipping liquidSVM mcSVM (own grid): not installed (pip install liquidsvm)" in text
    assert rows["svccv-own"]["grid"] == "own"


def test_so_suffix_shim_answers_the_extension_suffix_and_restores():
    original = sysconfig.get_config_var
    with tune.so_suffix_shim():
        so = sysconfig.get_config_var("SO")
        assert so is not None and so == (original("SO") or original("EXT_SUFFIX"))
        assert sysconfig.get_config_var("EXT_SUFFIX") == original("EXT_SUFFIX")
    assert sysconfig.get_config_var is original


def test_liquidsvm_missing_is_reported(monkeypatch):
    monkeypatch.setitem(sys.modules, "liquidSVM", None)  # import fails as not installed
    module, why = tune.load_liquidsvm()
    assert module is None and why == "not installed (pip install liquidsvm)"


def test_liquidsvm_route_or_its_reason():
    module, why = tune.load_liquidsvm()
    if module is None:
        assert why.startswith(("not installed", "not usable"))
        return
    assert sysconfig.get_config_var("SO") is None or sys.version_info < (3, 10)
    out = io.StringIO()
    res = tune.run_tune(["a9a"], [300], ["liquidsvm"], out=out, **TINY)
    rows = {r["route"]: r for r in res["classification"]}
    liquid = rows["liquidsvm"]
    assert 0.6 < liquid["accuracy"] <= 1.0 and 0.5 < liquid["cv_score"] <= 1.0
    assert liquid["C"] > 0 and liquid["gamma"] > 0 and liquid["grid"] == "own"
    assert "~" in _table_line(out.getvalue(), "a9a", "liquidsvm")


def test_svr_route_on_a_tiny_problem(monkeypatch):
    monkeypatch.setattr(tune, "load_cv_estimator", lambda name: (None, f"no {name} here"))
    X, y, Xt, _ = tune.regression_data(300)
    assert X.shape == (300, 10) and Xt.shape == (300, 10)
    assert y.mean() == pytest.approx(0.0, abs=1e-12) and y.std() == pytest.approx(1.0)
    out = io.StringIO()
    res = tune.run_tune(
        ["a9a"], [300], [], grid=(2, 2), n_folds=2, svr_rows=300, svr_grid=(2, 2, 2), out=out
    )
    (row,) = res["svr"]
    assert row["route"] == "GridSearchCV localsvm SVR" and 0.3 < row["r2"] <= 1.0
    assert row["chosen"][0] in (0.1, 1000.0)
    assert "skipping SVRCV: no SVRCV here" in out.getvalue()


def test_cells_part_says_what_it_needs(monkeypatch):
    monkeypatch.setattr(tune, "load_cv_estimator", lambda name: (None, f"no {name} here"))
    out = io.StringIO()
    res = tune.run_tune(
        ["a9a"],
        [300],
        [],
        grid=(2, 2),
        n_folds=2,
        svr_rows=0,
        cells_rows=600,
        n_test=300,
        out=out,
    )
    text = out.getvalue()
    assert "skipping SVCCV + SVC: no SVCCV here" in text
    if not tune.cellsvc_tunes():
        assert "this row needs CellSVC's tune parameter" in text
        assert res["cells"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grid", "3"], "--grid takes two counts (C, gamma), got 1"),
        (["--svr-grid", "2,2"], "--svr-grid takes three counts"),
        (["--folds", "1"], "cross-validation needs at least 2 folds"),
        (["--peers", "thundersvm"], "not thundersvm"),
        (["--datasets", "banana"], "bench tune runs on a9a, ijcnn1, usps"),
        (["--max-sklearn", "-1"], "--max-sklearn must be 0 or more, got -1"),
        (["--svr-rows", "3"], "--svr-rows must be 0 or at least 2 per fold"),
        (["--sizes", "1"], "a subsample needs at least 2 rows"),
        (["--cells-params", "colour=3"], "--cells-params: cells_params: 'colour=3' is not"),
    ],
)
def test_tune_cli_misuse_is_a_usage_error(args, message, capsys):
    from localsvm.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "tune", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_liquidsvm_is_a_peer_of_bench_tune_only(capsys):
    from localsvm.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "svc", "--peers", "liquidsvm"])
    assert exit_info.value.code == 2
    assert "only bench tune runs it" in capsys.readouterr().err


def test_tune_cli_names_match_the_module():
    from localsvm_benchmarks import __main__ as cli

    assert set(cli.TUNE_ONLY_PEERS) <= set(tune.TUNE_PEERS)
    assert set(tune.TUNE_PEERS) <= set(cli.BENCH_PEERS + cli.TUNE_ONLY_PEERS)
    assert set(tune.TUNE_DATASETS) <= set(cli.BENCH_DATASETS)
    assert cli.TUNE_DEFAULT_DATASETS.split(",") == list(tune.TUNE_DATASETS)
    assert cli.TUNE_DEFAULT_SIZES == tune.TUNE_SIZES


def test_bench_tune_from_the_command_line(monkeypatch, capsys):
    from localsvm.__main__ import main

    monkeypatch.setattr(tune, "load_cv_estimator", lambda name: (None, f"no {name} here"))
    main(
        [
            "bench",
            "tune",
            "--datasets",
            "usps",
            "--sizes",
            "300",
            "--grid",
            "2,2",
            "--folds",
            "2",
            "--n-test",
            "300",
            "--peers",
            "localsvm",
            "--svr-rows",
            "0",
        ]
    )
    out = capsys.readouterr().out
    assert "usps n=300: 300 train / 300 test (its own test split), 256 features" in out
    line = _table_line(out, "usps", "localsvm").split()
    assert line[1] == "300" and line[5] == "2×2"


def test_svccv_route_scores_the_grid_like_grid_search():
    if tune.load_cv_estimator("SVCCV")[0] is None:
        pytest.skip("localsvm.SVCCV is not in this build")
    out = io.StringIO()
    res = tune.run_tune(["a9a"], [300], ["localsvm"], out=out, **{**TINY, "grid": (3, 2)})
    rows = {r["route"]: r for r in res["classification"]}
    ours, grid = rows["svccv"], rows["localsvm"]
    Cs, gammas = tune.make_grid(tune.load_case("a9a", 300, 400)[0], (3, 2))
    assert ours["C"] in Cs and min(abs(g - ours["gamma"]) for g in gammas) < 1e-12
    # The same grid and folds: the best mean CV accuracy agrees up to the
    # solvers' tolerance (a few held-out rows at most).
    assert ours["cv_score"] == pytest.approx(grid["cv_score"], abs=0.01)
    assert ours["grid"] == "3×2"
    line = _table_line(out.getvalue(), "a9a", "localsvm")
    assert any(v.endswith("×") for v in line.split())


def test_an_interrupted_case_still_prints_what_finished(monkeypatch, capsys):
    from localsvm.__main__ import main

    monkeypatch.setattr(tune, "load_cv_estimator", lambda name: (None, f"no {name} here"))
    fit = tune._route_fit

    def stop_at_sklearn(route, *args):
        if route == "sklearn":
            raise KeyboardInterrupt
        return fit(route, *args)

    monkeypatch.setattr(tune, "_route_fit", stop_at_sklearn)
    code = main(
        [
            "bench",
            "tune",
            "--datasets",
            "a9a",
            "--sizes",
            "300",
            "--grid",
            "2,2",
            "--folds",
            "2",
            "--n-test",
            "300",
            "--peers",
            "localsvm,sklearn",
            "--svr-rows",
            "0",
        ]
    )
    assert code == 130
    captured = capsys.readouterr()
    assert "interrupted: the table holds the 1 routes that finished" in captured.out
    assert _table_line(captured.out, "a9a", "localsvm")
    assert "bench tune: interrupted" in captured.err


def test_cells_part_tunes_on_a_subsample_then_fits_every_row():
    if tune.load_cv_estimator("SVCCV")[0] is None:
        pytest.skip("localsvm.SVCCV is not in this build")
    out = io.StringIO()
    res = tune.run_tune(
        ["a9a"],
        [300],
        [],
        grid=(2, 2),
        n_folds=2,
        svr_rows=0,
        cells_rows=800,
        cells_subsample=300,
        n_test=400,
        out=out,
    )
    row = next(r for r in res["cells"] if r["route"].startswith("SVCCV"))
    assert row["route"] == "SVCCV on 300 + SVC"
    assert row["C"] in (0.1, 1000.0) and row["gamma"] > 0
    assert 0.5 < row["accuracy"] <= 1.0 and row["search_s"] > 0 and row["fit_s"] > 0
    assert "SVCCV on 300 + SVC" in out.getvalue()


def test_cells_part_runs_cellsvc_tuned_and_untuned():
    if not tune.cellsvc_tunes():
        pytest.skip("CellSVC has no tune parameter in this build")
    out = io.StringIO()
    res = tune.run_tune(
        ["a9a"],
        [300],
        [],
        grid=(2, 2),
        n_folds=2,
        svr_rows=0,
        cells_rows=800,
        cells_subsample=300,
        n_test=400,
        out=out,
    )
    by_route = {r["route"]: r for r in res["cells"]}
    plain, tuned = by_route["CellSVC(tune=False)"], by_route["CellSVC(tune=True)"]
    assert plain["C"] == 1.0 and plain["n_tuned"] == 0
    assert tuned["n_tuned"] == tuned["n_cells"] == 1
    assert 0.1 <= tuned["C"] <= 1000.0 and tuned["gamma"] > 0
    assert 0.5 < tuned["accuracy"] <= 1.0 and tuned["fit_s"] > 0
    assert "per cell gamma:" in out.getvalue()


def test_cells_params_add_a_row_with_those_settings():
    if not tune.cellsvc_tunes():
        pytest.skip("CellSVC has no tune parameter in this build")
    params = tune.parse_cells_params("tune_size=200, Cs=3,gammas=2")
    assert params == {"tune_size": 200, "Cs": 3, "gammas": 2}
    assert tune.parse_cells_params("tune_size=None,cell_size=auto,overlap=0.5") == {
        "tune_size": None,
        "cell_size": "auto",
        "overlap": 0.5,
    }
    for bad in ("tune=False", "Cs", "colour=3"):
        with pytest.raises(ValueError, match="name=value for one of CellSVC's parameters"):
            tune.parse_cells_params(bad)
    out = io.StringIO()
    res = tune.run_tune(
        ["a9a"],
        [300],
        [],
        grid=(2, 2),
        n_folds=2,
        svr_rows=0,
        cells_rows=800,
        cells_subsample=300,
        cells_params=params,
        n_test=400,
        out=out,
    )
    route = "CellSVC(tune=True, tune_size=200, Cs=3, gammas=2)"
    by_route = {r["route"]: r for r in res["cells"]}
    assert {"CellSVC(tune=False)", "CellSVC(tune=True)", route} <= set(by_route)
    row = by_route[route]
    assert row["n_tuned"] == row["n_cells"] == 1
    # Cs=3 on SVCCV's grid 10⁻¹ … 10³: 0.1, 10, 1000.
    assert set(row["cell_C"]) <= {0.1, 10.0, 1000.0}
    assert route in out.getvalue()


def test_cells_table_widens_its_route_column_for_a_long_row_name():
    # A row named by long cells_params keeps every figure under its header.
    short = "CellSVC(tune=False)"
    long = "CellSVC(tune=True, cell_size=50000, tune_size=5000, Cs=10, gammas=10)"
    rows = [
        (short, None, 9.19, 9.19, 86.87, 1.0, 0.05),
        (long, None, 146.4, 146.4, 90.61, 2.154, 0.21),
    ]
    out = io.StringIO()
    tune.print_columns(tune.cells_table([short, long]), rows, out)
    head, rule, *lines = out.getvalue().splitlines()
    assert len(rule) == len(head)
    end = head.index("total s") + len("total s")
    for line in lines:
        assert line.startswith(short) or line.startswith(long)
        # The total column ends where its header does, on every line.
        assert line[:end].rstrip().endswith(("9.19", "146.40"))
        assert line[end : end + 1] == " "
    # The route column never narrows below its least width.
    assert tune.cells_table([short])[0].head().startswith("route" + " " * 39)
