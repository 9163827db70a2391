"""argparse types shared by the command line and the ``reproduce`` commands:
each turns a bad value into argparse's usage error that names the valid ones."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


def names(kind: str, valid: Sequence[str]) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated list of names from ``valid``."""

    def parse(text: str) -> list[str]:
        names = [v.strip() for v in text.split(",") if v.strip()]
        unknown = [v for v in names if v not in valid]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"unknown {kind} {', '.join(map(repr, unknown))}; choose from {', '.join(valid)}"
            )
        if not names:
            raise argparse.ArgumentTypeError(f"name at least one {kind}: {', '.join(valid)}")
        return names

    return parse


def _whole(text: str, expected: str = "a whole number") -> int:
    """``int(text)``, or an argparse error that says what was expected."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None


def positive_int(text: str) -> int:
    """An argparse type: an integer ≥ 1."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def sizes(text: str) -> list[int]:
    """An argparse type: comma-separated sizes ≥ 2 (empty for none)."""
    sizes = []
    for part in (v.strip() for v in text.split(",")):
        if not part:
            continue
        size = _whole(part, "whole numbers")
        if size < 2:
            raise argparse.ArgumentTypeError(f"a subsample needs at least 2 rows, got {size}")
        sizes.append(size)
    return sizes


def fold_count(text: str) -> int:
    """An argparse type: a number of cross-validation folds, ≥ 2."""
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"cross-validation needs at least 2 folds, got {value}")
    return value


def positive_ints(text: str) -> list[int]:
    """An argparse type: comma-separated integers ≥ 1 (at least one)."""
    values = [positive_int(part.strip()) for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError("name at least one whole number")
    return values
