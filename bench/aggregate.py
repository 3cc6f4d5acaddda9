"""Benchmark of ``aggregate`` on the full v1 grid: 1,836 synthetic result.json files, 100 test items each.

    python bench/aggregate.py [--replicates 10000] [--reference-sample 3] [--keep DIR]

Prints figures only (asserts nothing about time): the bootstrap reference loop against the fast path on one cell
(and that both give the identical interval), the speedup ratio, the reference loop on a small sample of cells
extrapolated to the grid (the full reference run would take many minutes), and the total wall time of the
aggregate command over the grid (discovery + summaries + table + summary.json).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.statistics import paired_bootstrap_ci, paired_bootstrap_ci_reference  # noqa: E402
from engine.aggregate.cli import main as aggregate_main  # noqa: E402
from engine.aggregate.discovery import find_results, load_results  # noqa: E402
from engine.aggregate.summary import group_by_cell  # noqa: E402
from engine.aggregate.synthetic import grid_cells, synthetic_result, write_job  # noqa: E402

SEEDS = (0, 1, 2)


def generate(root: Path, n_items: int) -> int:
    count = 0
    for index, entry in enumerate(grid_cells()):
        for seed in SEEDS:
            rng = random.Random(index * 10 + seed)
            result = synthetic_result(entry["grid"], seed, n_items=n_items, rng=rng,
                                      registry=entry["registry_key"], source_tables=entry["source_tables"])
            write_job(root, result)
            count += 1
    return count


def strata_of(jobs) -> list[list[tuple[float, float]]]:
    ordered = sorted(jobs, key=lambda job: job.seed)
    return [list(zip(job.baseline_scores, job.deployed_scores)) for job in ordered]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--reference-sample", type=int, default=3, help="cells timed with the reference loop")
    parser.add_argument("--keep", type=Path, default=None, help="generate into DIR and keep it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="aggregate-bench-") as scratch:
        root = args.keep or Path(scratch) / "runs"
        start = time.perf_counter()
        jobs = generate(root, args.items)
        print(f"generated {jobs} result.json files ({args.items} test items each) in "
              f"{time.perf_counter() - start:.1f} s")

        results, skipped = load_results(find_results([root]), roots=[root])
        cells = list(group_by_cell(results).values())
        print(f"cells: {len(cells)}  skipped files: {len(skipped)}  replicates: {args.replicates}")

        strata = strata_of(cells[0])
        paired_bootstrap_ci(strata, 100, 0)  # warm-up: first numpy calls are not representative
        start, cpu = time.perf_counter(), time.process_time()
        reference = paired_bootstrap_ci_reference(strata, args.replicates, 0)
        reference_seconds, reference_cpu = time.perf_counter() - start, time.process_time() - cpu
        start, cpu = time.perf_counter(), time.process_time()
        fast = paired_bootstrap_ci(strata, args.replicates, 0)
        fast_seconds, fast_cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"one cell, reference loop: {reference_seconds:.3f} s wall / {reference_cpu:.3f} s cpu   "
              f"fast path: {fast_seconds:.3f} s wall / {fast_cpu:.3f} s cpu   "
              f"speedup: {reference_seconds / fast_seconds:.1f}x wall, {reference_cpu / fast_cpu:.1f}x cpu   "
              f"identical CI: {reference == fast} {fast}")

        sample = cells[:: max(1, len(cells) // max(1, args.reference_sample))][: args.reference_sample]
        start = time.perf_counter()
        identical = all(paired_bootstrap_ci_reference(strata_of(c), args.replicates, 0)
                        == paired_bootstrap_ci(strata_of(c), args.replicates, 0) for c in sample)
        both = time.perf_counter() - start
        print(f"reference loop on a sample of {len(sample)} cells (not all {len(cells)}: too slow), "
              f"identical to the fast path on each: {identical}; extrapolated reference bootstrap for the grid: "
              f"~{reference_seconds * len(cells):.0f} s, fast path ~{fast_seconds * len(cells):.0f} s "
              f"(sample check took {both:.1f} s)")

        out = Path(scratch) / "summary.json"
        captured = io.StringIO()
        start, cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(captured):
            code = aggregate_main([str(root), "--bootstrap", str(args.replicates), "--out", str(out)])
        total, total_cpu = time.perf_counter() - start, time.process_time() - cpu
        lines = captured.getvalue().count("\n") + 1
        print(f"full grid: aggregate {jobs} jobs / {len(cells)} cells with {args.replicates} replicates: "
              f"{total:.1f} s wall, {total_cpu:.1f} s cpu (exit {code}, {lines} table lines, summary.json {out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
