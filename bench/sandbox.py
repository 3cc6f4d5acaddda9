"""Sandbox cost figures (prints numbers, asserts nothing about time).

    python bench/sandbox.py [--runs 20] [--rows 50] [--concurrency 8]

1. cost of one sandboxed execution: start to exit of a trivial program, median of N (plus a plain
   `python -c pass` subprocess measured in the same run as the baseline);
2. rows/second when scoring APPS-shaped rows (3 stdin tests each) at concurrency 1 vs the job's concurrency;
3. event-loop responsiveness while scoring: max and median lateness of a 10 ms ticker task.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.apps import APPSBenchmark  # noqa: E402
from benchmarks.sandbox import SandboxLimits, probe, run_python_sync  # noqa: E402
from core.models import AgentOutput, Row  # noqa: E402

SOLUTION = "n = int(input())\na = list(map(int, input().split()))\nprint(max(a))\n"


def apps_rows(n: int) -> list[Row]:
    rng = random.Random(0)
    rows = []
    for i in range(n):
        tests = []
        for _ in range(3):
            values = [rng.randint(-100, 100) for _ in range(rng.randint(1, 20))]
            tests.append({"input": f"{len(values)}\n{' '.join(map(str, values))}\n", "output": f"{max(values)}\n"})
        rows.append(Row(id=str(i), dataset="apps", task={"question": "max", "starter_code": "", "mode": "stdin",
                                                        "fn_name": None, "difficulty": "interview", "url": ""},
                        gold={"mode": "stdin", "fn_name": None, "tests": tests, "solutions": [SOLUTION]}))
    return rows


def one_execution(runs: int) -> None:
    probe()  # exclude the one-off isolation probe
    sandboxed, plain = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = run_python_sync("pass\n")
        sandboxed.append(time.perf_counter() - t0)
        assert result.ok, result
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        plain.append(time.perf_counter() - t0)
    s, p = statistics.median(sandboxed), statistics.median(plain)
    print(f"isolation: {probe().as_dict()}")
    print(f"one sandboxed execution (median of {runs}): {s * 1000:.1f} ms; plain `python -I -c pass`: "
          f"{p * 1000:.1f} ms; ratio {s / p:.2f}x")


async def score_all(bench: APPSBenchmark, rows: list[Row], concurrency: int) -> tuple[float, list[float]]:
    output = AgentOutput(text=f"```python\n{SOLUTION}```")
    limiter = anyio.CapacityLimiter(concurrency)
    lateness: list[float] = []
    done = anyio.Event()
    values: list[float] = []

    async def ticker() -> None:
        period = 0.010
        while not done.is_set():
            t0 = time.perf_counter()
            await anyio.sleep(period)
            lateness.append(time.perf_counter() - t0 - period)

    async def one(row: Row) -> None:
        async with limiter:
            values.append((await bench.score_async(row, output)).value)

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        async with anyio.create_task_group() as inner:
            for row in rows:
                inner.start_soon(one, row)
        done.set()
    elapsed = time.perf_counter() - t0
    assert values == [1.0] * len(rows), "scoring failed"
    return elapsed, lateness


def throughput(n_rows: int, concurrency: int) -> None:
    bench = APPSBenchmark(limits=SandboxLimits(cpu_seconds=4, wall_seconds=6))
    rows = apps_rows(n_rows)
    base = None
    for c in sorted({1, concurrency}):
        elapsed, lateness = anyio.run(score_all, bench, rows, c)
        rate = n_rows / elapsed
        base = base or rate
        print(f"scoring {n_rows} APPS-shaped rows x 3 tests at concurrency {c}: {elapsed:.2f} s, {rate:.2f} rows/s "
              f"({rate / base:.2f}x of concurrency 1); 10 ms ticker lateness max {max(lateness) * 1000:.1f} ms, "
              f"median {statistics.median(lateness) * 1000:.2f} ms over {len(lateness)} ticks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    one_execution(args.runs)
    throughput(args.rows, args.concurrency)


if __name__ == "__main__":
    main()
