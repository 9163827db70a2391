"""Printing helpers shared by the tables and figures."""

from __future__ import annotations

from typing import Any, TextIO


def say(out: TextIO, text: str = "") -> None:
    """Print one line of ``text`` to ``out`` and flush it."""
    print(text, file=out, flush=True)


def heading(out: TextIO, text: str) -> None:
    """Print ``text`` as a section heading: a blank line, then underlined."""
    say(out)
    say(out, text)
    say(out, "=" * len(text))


def describe(params: dict[str, Any], relative: bool = True) -> str:
    """Text such as ``C=10 λ=1m κ=3`` for a grid point.

    Parameters
    ----------
    params : dict
        The grid point.
    relative : bool, default=True
        Whether widths are factors of ``m`` (then suffixed with ``m``).

    Returns
    -------
    str
    """
    parts = []
    for key, value in params.items():
        if key == "width":
            parts.append(f"λ={value:g}{'m' if relative else ''}")
        elif key == "kappa":
            parts.append(f"κ={value}")
        else:
            parts.append(f"{key}={value:g}")
    return " ".join(parts)


def grid_text(grid: list[dict[str, Any]]) -> str:
    """The axes of a grid, such as ``C ∈ {1, 10}, λ/m ∈ {0.25, 1}``.

    Parameters
    ----------
    grid : list of dict
        The grid points.

    Returns
    -------
    str
        Each parameter with its distinct values, in order of appearance.
    """
    axes: dict[str, list[Any]] = {}
    for p in grid:
        for key, value in p.items():
            axes.setdefault(key, [])
            if value not in axes[key]:
                axes[key].append(value)
    names = {"width": "λ/m", "kappa": "κ"}
    return ", ".join(
        f"{names.get(k, k)} ∈ {{{', '.join(f'{v:g}' for v in vs)}}}" for k, vs in axes.items()
    )
