"""Reproductions of the papers' experiments: ``python -m localsvm_experiments NAME``
(also ``localsvm reproduce NAME`` once this package is installed)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import EXPERIMENTS, load


def build_parser(prog: str = "localsvm reproduce") -> argparse.ArgumentParser:
    """The command line of the reproductions: one sub-command per experiment."""
    parser = argparse.ArgumentParser(prog=prog, description="reproduce a paper's experiments")
    experiments = parser.add_subparsers(dest="experiment", required=True)
    for name, (_, help_text) in sorted(EXPERIMENTS.items()):
        load(name).add_arguments(experiments.add_parser(name, help=help_text))
    return parser


def main(argv: Sequence[str] | None = None, prog: str = "localsvm reproduce") -> int:
    """Run the experiment that ``argv`` names; returns the exit code."""
    args = build_parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    load(args.experiment).run(args, out=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(prog="python -m localsvm_experiments"))
