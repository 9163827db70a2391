"""What every bench section and reproduction shares: one clock, one table
printer and one set of experiment options.

- :class:`Stopwatch` and :func:`timed`: wall-clock (and process CPU) time of
  a block or a call, the best of ``repeat`` calls;
- :func:`columns` (a table's layout, written as its header reads) and
  :func:`print_table`: a fixed-width table with a header and a rule, each
  cell formatted by its :class:`Column`;
- :func:`add_experiment_options`: the options the reproductions have in
  common, under one spelling each (``--repetitions``, ``--folds``,
  ``--timing``, ``--repeat``, ``--out``, ``--datasets``), the older
  spellings (``--realizations``, ``--runtime``, ``--bench``,
  ``--speed-repeat``) kept as aliases.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from localsvm import _argtypes

T = TypeVar("T")


class Stopwatch:
    """Wall-clock and process CPU seconds of a ``with`` block, or since it
    was made (:attr:`elapsed`).

    ``seconds`` and ``cpu_seconds`` are set when the block ends (also when it
    raises).
    """

    seconds: float
    cpu_seconds: float

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()

    @property
    def elapsed(self) -> float:
        """Wall-clock seconds since the stopwatch was made or its block began."""
        return time.perf_counter() - self._wall

    def __enter__(self) -> Stopwatch:
        self._start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._wall
        self.cpu_seconds = time.process_time() - self._cpu


def timed(fn: Callable[[], T], repeat: int = 1) -> tuple[T, float]:
    """``fn()``'s result (of its last call) and its best wall-clock time in
    seconds over ``repeat`` calls."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    best = float("inf")
    for _ in range(repeat):
        with Stopwatch() as clock:
            result = fn()
        best = min(best, clock.seconds)
    return result, best


@dataclass(frozen=True)
class Column:
    """One column of :func:`print_table`.

    ``spec`` is the format spec of a value (``"<8"``, ``">8.2f"``,
    ``">+8.2f"``); its width, plus that of ``suffix`` (printed after each
    value: ``"×"``, ``"%"``), is the column's width. A cell that is a string
    is aligned as the spec says but not formatted; None is left blank.
    """

    header: str
    spec: str = ""
    suffix: str = ""

    @property
    def _align(self) -> str:
        m = re.match(r"^([<>^])?", self.spec)
        return (m.group(1) if m and m.group(1) else "<") if self.spec else "<"

    @property
    def width(self) -> int:
        m = re.match(r"^[<>^]?[+\- ]?0?(\d+)", self.spec)
        return (int(m.group(1)) if m else 0) + len(self.suffix)

    def _fit(self, text: str) -> str:
        return f"{text:{self._align}{self.width}}" if self.width else text

    def head(self) -> str:
        """The header, aligned to the column's width."""
        return self._fit(self.header)

    def cell(self, value: Any) -> str:
        """``value`` formatted for this column."""
        if value is None:
            return " " * self.width
        if isinstance(value, str):
            return self._fit(value)
        return format(value, self.spec) + self.suffix


_SPEC = re.compile(r"^(?P<spec>[<>^][+\- ]?\d+(?:\.\d+)?[defg]?)(?P<suffix>\S*)$")


def columns(layout: str) -> tuple[Column, ...]:
    """The columns of a table, written as its header reads: entries split
    by ``" | "``, each a header and, last, the format spec of its values
    with what follows them (``"fit s >8.2f"``, ``"accuracy >8.2f%"``,
    ``"fit × >6.1f×"``); an entry without a spec is a header alone (the
    last, free-width column)."""
    out = []
    for entry in layout.split(" | "):
        header, _, last = entry.strip().rpartition(" ")
        match = _SPEC.match(last)
        if header and match:
            out.append(Column(header, match["spec"], match["suffix"]))
        else:
            out.append(Column(entry.strip()))
    return tuple(out)


def print_table(
    table: Sequence[Column],
    rows: Iterable[Sequence[Any]],
    out: TextIO,
    *,
    indent: str = "",
    rule: bool = True,
    head: bool = True,
) -> None:
    """Print a header line, a rule of ``-`` as long as it (unless ``rule`` is
    False) and one line per row, the cells joined by one space; every line
    starts with ``indent``. With ``head=False`` only the rows are printed (a
    table printed in pieces, notes between them)."""
    if head:
        text = " ".join(c.head() for c in table).rstrip()
        print(indent + text, file=out)
        if rule:
            print(indent + "-" * len(text), file=out)
    for row in rows:
        if len(row) != len(table):
            raise ValueError(f"a row has {len(row)} cells for {len(table)} columns")
        line = " ".join(c.cell(v) for c, v in zip(table, row, strict=True))
        print(indent + line.rstrip(), file=out, flush=True)


def save_figure(fig: Any, path: Path, dpi: int = 100) -> Path:
    """Lay ``fig`` (a matplotlib figure) out tightly and save it to ``path``
    (its folder made if needed) at ``dpi``; returns ``path``."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def add_experiment_options(
    parser: argparse.ArgumentParser,
    *,
    quick: str,
    repetitions: str | None = None,
    repetitions_default: int | None = None,
    folds: str | None = None,
    timing: str | None = None,
    repeat: str | None = None,
    datasets: Sequence[str] | None = None,
    datasets_help: str = "comma-separated data sets",
    figures: str | None = None,
) -> None:
    """Add the options the reproductions share to ``parser``, each under one
    name; an experiment passes the help text of those it takes.

    ``--quick`` (a smoke run), ``--repetitions N`` (alias ``--realizations``:
    splits or realizations per data set), ``--folds K`` (cross-validation
    folds), ``--timing`` (aliases ``--runtime``, ``--bench``: also time the
    methods), ``--repeat N`` (alias ``--speed-repeat``: timed runs per
    measurement, the best kept), ``--datasets a,b`` and ``--out DIR`` (the
    folder for the images; ``figures`` is its default).
    """
    parser.add_argument("--quick", action="store_true", help=quick)

    def count(names: tuple[str, ...], default: int | None, text: str) -> None:
        dest = names[0].lstrip("-")
        kind = _argtypes.positive_int
        parser.add_argument(*names, dest=dest, type=kind, default=default, help=text)

    if repetitions is not None:
        count(("--repetitions", "--realizations"), repetitions_default, repetitions)
    if folds is not None:
        parser.add_argument("--folds", type=_argtypes.fold_count, default=None, help=folds)
    if datasets is not None:
        parser.add_argument(
            "--datasets",
            type=_argtypes.names("data set", tuple(datasets)),
            default=",".join(datasets),
            help=f"{datasets_help}, from: {', '.join(datasets)} (default: all)",
        )
    if timing is not None:
        parser.add_argument(
            "--timing", "--runtime", "--bench", dest="timing", action="store_true", help=timing
        )
    if repeat is not None:
        count(("--repeat", "--speed-repeat"), None, repeat)
    if figures is not None:
        parser.add_argument(
            "--out", default=figures, help="folder for the images (default: %(default)s)"
        )
