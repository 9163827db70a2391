"""The pieces every bench section and reproduction shares: the timer, the
table printer and the experiment options (with their older spellings)."""

from __future__ import annotations

import argparse
import io

import pytest
from localsvm_benchmarks.report import (
    Column,
    Stopwatch,
    add_experiment_options,
    columns,
    print_table,
    timed,
)
from localsvm_experiments.__main__ import build_parser


def test_timed_returns_the_result_and_the_best_of_its_calls():
    calls = []
    result, seconds = timed(lambda: calls.append(1) or len(calls), repeat=3)
    assert result == 3 and len(calls) == 3
    assert 0 <= seconds < 60
    with pytest.raises(ValueError, match="repeat"):
        timed(lambda: None, repeat=0)


def test_stopwatch_measures_wall_and_cpu_time():
    with Stopwatch() as clock:
        sum(i * i for i in range(20_000))
    assert clock.seconds >= 0 and clock.cpu_seconds >= 0
    assert clock.elapsed >= clock.seconds


def test_columns_read_as_the_header_reads():
    table = columns("data <8 | fit s >8.2f | accuracy >8.2f% | C, gamma >10 | note")
    assert table == (
        Column("data", "<8"),
        Column("fit s", ">8.2f"),
        Column("accuracy", ">8.2f", "%"),
        Column("C, gamma", ">10"),
        Column("note"),
    )


def test_print_table_aligns_headers_and_cells():
    out = io.StringIO()
    table = columns("data <6 | fit s >7.2f | ratio >5.1f× | note")
    print_table(table, [("a", 1.5, 2.0, "x"), ("bb", 10.25, None, "—")], out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "data     fit s  ratio note"
    assert lines[1] == "-" * len(lines[0])
    assert lines[2] == "a         1.50   2.0× x"
    # None leaves the cell blank; a string is aligned, not formatted.
    assert lines[3] == "bb       10.25        —"
    with pytest.raises(ValueError, match="3 cells for 4 columns"):
        print_table(table, [("a", 1.0, 2.0)], out)


def test_rows_alone_continue_a_table():
    out = io.StringIO()
    table = columns("n >3d")
    print_table(table, [(7,)], out, head=False, indent="  ")
    assert out.getvalue() == "    7\n"


def test_experiment_options_keep_their_older_spellings():
    parser = argparse.ArgumentParser()
    add_experiment_options(
        parser, quick="smoke", repetitions="runs", folds="folds", timing="time", repeat="best of"
    )
    new = parser.parse_args(["--repetitions", "2", "--timing", "--repeat", "4"])
    old = parser.parse_args(["--realizations", "2", "--bench", "--speed-repeat", "4"])
    assert vars(new) == vars(old)
    assert parser.parse_args(["--runtime"]).timing
    with pytest.raises(SystemExit):
        parser.parse_args(["--repetitions", "0"])


@pytest.mark.parametrize("name", ["lsvm", "lisvm", "flsa", "mcsvm", "usps"])
def test_every_reproduction_takes_the_shared_options(name):
    args = build_parser().parse_args([name, "--quick"])
    assert args.quick
    for option in ("repetitions", "timing", "repeat", "folds", "datasets", "out"):
        # An experiment that takes an option takes it under this one name.
        assert not any(k.startswith(option) and k != option for k in vars(args))
