"""``python -m engine aggregate ROOT... [--out summary.json] [--bootstrap 10000] [--family task|method|none]
[--include-nonconformant] [--plot DIR]``

Stdout: the TSV table. Stderr: one warning line per skipped file, and errors. Exit 0 on success, 1 when no
usable result.json is found, 2 on usage errors (including ``--plot`` without matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.statistics import MIN_BOOTSTRAP_REPLICATES
from engine.aggregate.discovery import find_results, load_results
from engine.aggregate.plots import PlotUnavailable, load_pyplot, write_plots
from engine.aggregate.summary import FAMILIES, aggregate
from engine.aggregate.tables import format_table
from engine.args import ParseError, StrictParser, check_out_directory, check_out_file
from engine.log import get_logger

log = get_logger("engine.aggregate")

PROG = "python -m engine aggregate"


def _replicates(text: str) -> int:
    if not (text.isascii() and text.isdigit()):  # int() also takes "٤" and "1_0"
        raise argparse.ArgumentTypeError(f"not an integer written with ASCII digits: {text!r}")
    value = int(text)
    if value < MIN_BOOTSTRAP_REPLICATES:
        raise argparse.ArgumentTypeError(f"at least {MIN_BOOTSTRAP_REPLICATES} replicates are required, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = StrictParser(  # `--boot 5` is an error, not `--bootstrap 5`
        prog=PROG,
        description="Paired seed-0/1/2 summary of mas-promptbench-v1 job results (protocol 5.8): per cell the "
        "per-seed means and deltas, mean and sample std of delta_pp, the seed-stratified paired bootstrap CI, "
        "per-seed exact McNemar p-values with Holm correction within a family, fallbacks and failure counts.",
    )
    parser.add_argument("roots", nargs="+", type=Path, metavar="ROOT",
                        help="job directories, result.json files, or directories containing them")
    parser.add_argument("--out", type=Path, default=None, metavar="SUMMARY_JSON",
                        help="also write the summary (schema mas-promptbench-summary/v1) here, atomically")
    parser.add_argument("--bootstrap", type=_replicates, default=10_000, metavar="R",
                        help=f"bootstrap replicates (default 10000, minimum {MIN_BOOTSTRAP_REPLICATES})")
    parser.add_argument("--family", choices=FAMILIES, default="task",
                        help="Holm family: task (task|task_model, default), method, or none (no adjustment)")
    parser.add_argument("--include-nonconformant", action="store_true",
                        help="aggregate jobs with protocol_conformant false too (smoke budgets, off-grid cells)")
    parser.add_argument("--plot", type=Path, default=None, metavar="DIR",
                        help="write PNG plots into DIR (needs matplotlib: the 'plot' extra)")
    return parser


def write_json_atomic(path: Path, value: Any) -> None:
    """Write JSON to a temp file beside ``path``, then ``os.replace`` it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(value, stream, indent=1, allow_nan=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _err(message: str) -> None:
    log.error(f"aggregate: {message}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the aggregate command; ``argv`` excludes the word "aggregate". Returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except ParseError as exc:  # one line on stderr, exit 2 (argparse would print usage + message)
        _err(f"error: {exc.message}")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.out is not None:  # checked before any output: one line, exit 2 (engine/args.py)
        check_out_file(args.out, "--out")
    if args.plot is not None:
        check_out_directory(args.plot, "--plot")
    missing = [root for root in args.roots if not root.exists()]
    if missing:
        _err(f"error: no such file or directory: {', '.join(map(str, missing))}")
        return 2
    pyplot = None
    if args.plot is not None:
        try:
            pyplot = load_pyplot()
        except PlotUnavailable as exc:
            _err(f"error: {exc}")
            return 2

    paths = find_results(args.roots)
    if not paths:
        _err(f"error: no result.json found under {' '.join(map(str, args.roots))}")
        return 1
    results, skipped = load_results(paths, roots=args.roots, include_nonconformant=args.include_nonconformant)
    for item in skipped:
        _err(f"warning: skipped {item.path}: {item.reason}")
    if not results:
        _err(f"error: no usable job results ({len(skipped)} result.json file(s) skipped)")
        return 1

    summary = aggregate(results, skipped=skipped, bootstrap_replicates=args.bootstrap, family=args.family)
    print(format_table(summary))
    if args.out is not None:
        write_json_atomic(args.out, summary)
    if pyplot is not None:
        written, warnings = write_plots(summary, results, args.plot, pyplot=pyplot)
        for warning in warnings:
            _err(f"warning: learning curve {warning}")
        _err(f"wrote {len(written)} plot(s) to {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
