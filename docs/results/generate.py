"""Run the commands whose output the documentation shows, and save it.

Each command's output goes to ``docs/results/NAME.txt`` under two header
lines: the command line as typed, and when, how long and on what load it
ran. The documentation pages include these files as they are, so a figure
on the site is never typed by hand.

Usage (from the repository root, with localsvm, ./benchmarks and
./experiments importable)::

    python docs/results/generate.py                 # the quick commands
    python docs/results/generate.py usps-quick demo # the named ones
    python docs/results/generate.py --long          # also the full runs (hours)
    python docs/results/generate.py --list          # names, kinds, durations

Figures that the commands draw are written to a temporary directory and
dropped: the pages draw their own with the plot directive.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: ``bench tune``'s options for localsvm's routes alone (no peers, no SVR table).
LOCALSVM_ONLY = [
    "--peers",
    "localsvm",
    "--max-sklearn",
    "0",
    "--max-sklearnex",
    "0",
    "--svr-rows",
    "0",
]

#: name -> (arguments of ``python -m localsvm``, or a whole command line from
#: ``bash`` or ``python``; long run?; how long it takes)
COMMANDS: dict[str, tuple[list[str], bool, str]] = {
    "demo": (["demo"], False, "under a minute"),
    "info": (["info"], False, "seconds"),
    # A shell session: the page's command-line transcript (a9a written as files).
    "cli-session": (
        ["bash", "docs/examples/cli_session.sh"],
        False,
        "about 5 minutes idle, 15 under load",
    ),
    "usps-quick": (["reproduce", "usps", "--quick"], False, "about a minute"),
    "lisvm-quick": (["reproduce", "lisvm", "--quick"], False, "about a minute"),
    "flsa-quick": (["reproduce", "flsa", "--quick"], False, "about a minute"),
    "mcsvm-quick": (["reproduce", "mcsvm", "--quick"], False, "about a minute"),
    "lsvm-quick": (["reproduce", "lsvm", "--quick"], False, "about a minute"),
    "bench-family-2000": (["bench", "family", "--n-train", "2000"], False, "about a minute"),
    "lisvm-bench": (["reproduce", "lisvm", "--bench"], False, "about a minute"),
    "flsa-bench": (["reproduce", "flsa", "--bench", "--skip-accuracy"], False, "under a minute"),
    "bench-tune-quick": (
        [
            "bench",
            "tune",
            "--datasets",
            "usps",
            "--sizes",
            "1000",
            "--grid",
            "5,5",
            "--svr-rows",
            "1000",
            "--svr-grid",
            "3,3,2",
            "--peers",
            "localsvm,sklearn",
        ],
        False,
        "under a minute",
    ),
    # Full protocols: minutes to hours on a 2-core machine.
    "bench-tune-20k": (
        [
            "bench",
            "tune",
            "--datasets",
            "a9a,ijcnn1",
            "--sizes",
            "20000",
            *LOCALSVM_ONLY,
        ],
        True,
        "about an hour",
    ),
    # Tuned cells against SVCCV on a 20 000-row subsample and one SVC, at 200 000 rows.
    "bench-tune-cells": (
        [
            "bench",
            "tune",
            "--datasets",
            "a9a",
            "--sizes",
            "1000",
            *LOCALSVM_ONLY,
            "--cells-rows",
            "200000",
            "--cells-params",
            "cell_size=50000,tune_size=5000,Cs=10",
        ],
        True,
        "about 6 minutes",
    ),
    "bench-tune": (
        [
            "bench",
            "tune",
            "--datasets",
            "a9a,ijcnn1,usps",
            "--sizes",
            "5000",
            "--peers",
            "localsvm,sklearnex,liquidsvm",
            "--max-sklearn",
            "0",
            "--svr-rows",
            "2000",
        ],
        True,
        "about 30 minutes",
    ),
    "usps": (["reproduce", "usps"], True, "2 to 3 minutes"),
    "lisvm": (["reproduce", "lisvm"], True, "about 5 minutes"),
    "flsa-banana-splice-image": (
        ["reproduce", "flsa", "--datasets", "banana,splice,image"],
        True,
        "about 50 minutes",
    ),
    "flsa-ringnorm": (["reproduce", "flsa", "--datasets", "ringnorm"], True, "about 12 minutes"),
    "flsa-tuning": (["reproduce", "flsa", "--skip-accuracy", "--tuning"], True, "2 to 3 minutes"),
    "mcsvm-segment": (["reproduce", "mcsvm", "--datasets", "segment"], True, "about 85 minutes"),
    "mcsvm-waveform": (["reproduce", "mcsvm", "--datasets", "waveform"], True, "about 30 minutes"),
    "mcsvm-heart-vehicle": (
        ["reproduce", "mcsvm", "--datasets", "heart,vehicle"],
        True,
        "about 20 minutes",
    ),
    "lsvm-breast": (
        ["reproduce", "lsvm", "--datasets", "breast", "--skip-figure"],
        True,
        "about 20 minutes",
    ),
    "lsvm-yeast": (
        ["reproduce", "lsvm", "--datasets", "yeast", "--skip-figure"],
        True,
        "about 40 minutes",
    ),
    "lsvm-iris-glass": (
        ["reproduce", "lsvm", "--datasets", "iris,glass", "--skip-figure"],
        True,
        "about 20 minutes",
    ),
    "lsvm-runtime": (["reproduce", "lsvm", "--skip-table", "--runtime"], True, "about 5 minutes"),
    "bench-family": (["bench", "family", "--repeat", "3"], True, "about 4 minutes"),
    "bench-online": (
        ["bench", "online", "--chunks", "1,100", "--rebatch-rows", "0"],
        True,
        "about 3 minutes",
    ),
    "bench-svc": (
        ["bench", "--repeat", "3", "--datasets", "ijcnn1,a9a", "--scaling", "", "--no-memory"],
        True,
        "about 10 minutes",
    ),
    "bench-local": (["bench", "local", "--peers", "localsvm,sklearn"], True, "about 5 minutes"),
    "bench-scale": (["bench", "scale"], True, "about 15 minutes idle, 25 under load"),
    "bench-sparse": (["bench", "sparse"], True, "about 10 minutes"),
    # CellSVC's routing rules on one fitted model per set.
    "cells-routing": (
        ["python", "-m", "localsvm_benchmarks.routing"],
        True,
        "about a minute",
    ),
    "cells-routing-small": (
        [
            "python",
            "-m",
            "localsvm_benchmarks.routing",
            "--cell-size",
            "2000",
            "--sets",
            "a9a",
            "ijcnn1",
            "usps",
        ],
        True,
        "under a minute",
    ),
    "cells-routing-disjoint": (
        [
            "python",
            "-m",
            "localsvm_benchmarks.routing",
            "--cell-size",
            "2000",
            "--overlap",
            "0",
        ],
        True,
        "about a minute",
    ),
    "cells-routing-tuned": (
        ["python", "-m", "localsvm_benchmarks.routing", "--tune"],
        True,
        "about 2 minutes",
    ),
}


def _command(argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` of :data:`COMMANDS`."""
    return argv if argv[0] in ("bash", "python") else ["python", "-m", "localsvm", *argv]


def _resolve(arg: str) -> str:
    """``python`` as this interpreter, a script of the repository by its path."""
    if arg == "python":
        return sys.executable
    return str(ROOT / arg) if arg.endswith(".sh") else arg


def header(argv: list[str], started: dt.datetime, seconds: float) -> str:
    """The two lines above a saved output: the command, then when it ran."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    minutes, secs = divmod(round(seconds), 60)
    took = f"{minutes} min {secs:02d} s" if minutes else f"{secs} s"
    return (
        f"$ {shlex.join(_command(argv))}\n"
        f"# ran {started:%Y-%m-%d %H:%M} UTC, {took} wall, load average {load:.1f}"
        f" on {os.cpu_count()} CPUs (docs/results/generate.py)\n"
    )


def run(name: str) -> Path:
    """Run the command called ``name`` and write ``docs/results/NAME.txt``."""
    argv = COMMANDS[name][0]
    env = dict(os.environ)
    # The checkout's sources, except a localsvm without its compiled core (a
    # fresh clone whose package is installed, as in CI): then the installed one.
    built = any((ROOT / "python" / "localsvm").glob("_core*.so"))
    folders = ("python", "benchmarks", "experiments") if built else ("benchmarks", "experiments")
    paths = [str(ROOT / p) for p in folders]
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    env.setdefault("COLUMNS", "200")
    # ``python`` in a shell session is this interpreter.
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    started = dt.datetime.now(dt.timezone.utc)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(
            [_resolve(a) for a in _command(argv)],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
        )
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{name}: {shlex.join(_command(argv))} exited {proc.returncode}")
    path = HERE / f"{name}.txt"
    path.write_text(header(argv, started, seconds) + proc.stdout, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="commands to run (default: every quick one)")
    parser.add_argument("--long", action="store_true", help="also run the full protocols")
    parser.add_argument("--list", action="store_true", help="list the commands and stop")
    args = parser.parse_args(argv)
    if args.list:
        for name, (cmd, long, took) in COMMANDS.items():
            kind = "full" if long else "quick"
            print(f"{name:26s} {kind:5s} {took:18s} {shlex.join(_command(cmd))}")
        return 0
    unknown = sorted(set(args.names) - set(COMMANDS))
    if unknown:
        parser.error(f"unknown command name(s) {unknown}; --list shows them")
    names = args.names or [n for n, (_, long, _) in COMMANDS.items() if args.long or not long]
    for name in names:
        print(f"{name}: {run(name).relative_to(ROOT)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
