"""Sandbox cost figures (prints numbers, asserts nothing about time).

    python bench/sandbox.py [--runs 20] [--rows 50] [--concurrency 8]

1. cost of one execution in the jail vs the same execution bare (the same bootstrap and program in a plain
   subprocess, no jail: the `--unsafe-sandbox` path), interleaved, median of N; the difference is the jail's
   overhead (target <= 30 ms); a plain `python -I -c pass` is printed for scale;
2. rows/second when scoring 50 APPS-shaped rows (3 stdin tests each) in the jail at concurrency 1 vs 8 (target:
   concurrency 8 >= 1.8x concurrency 1 on 2 cores; the sandbox limiter allows one execution per core);
3. event-loop responsiveness while scoring: max and median lateness of a 10 ms ticker task;
4. the SWE tool profile (`--swe`, on by default): one repository tool call (shell_exec `true`, file_read) in the
   SWE jail (benchmarks/swe/tool_jail.py) vs the same call bare (the --unsafe-sandbox path), interleaved, median
   of N on a real checkout; the difference is the jail's overhead per tool call (target <= 30 ms).

The machine may be shared: figures are medians and ratios against baselines measured in the same run.
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
from benchmarks.sandbox.aio import default_concurrency  # noqa: E402
from benchmarks.sandbox.isolation import UNSAFE  # noqa: E402
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
    iso = probe()  # exclude the one-off isolation probe
    if not iso.available:
        raise SystemExit(f"no jail on this machine: {iso.reason}")
    jailed, bare, plain = [], [], []
    for _ in range(runs):
        for sink, isolation in ((jailed, None), (bare, UNSAFE)):
            t0 = time.perf_counter()
            result = run_python_sync("pass\n", isolation=isolation)
            sink.append(time.perf_counter() - t0)
            assert result.ok, result
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        plain.append(time.perf_counter() - t0)
    j, b, p = (statistics.median(x) * 1000 for x in (jailed, bare, plain))
    print(f"isolation: {iso.as_dict()}")
    print(f"one execution (median of {runs}): jail {j:.1f} ms, bare {b:.1f} ms -> jail overhead {j - b:.1f} ms "
          f"per execution (target <= 30 ms: {'met' if j - b <= 30 else 'NOT met'}); plain `python -I -c pass` "
          f"{p:.1f} ms")


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
    rates = {}
    for c in sorted({1, concurrency}):
        elapsed, lateness = anyio.run(score_all, bench, rows, c)
        rates[c] = n_rows / elapsed
        print(f"scoring {n_rows} APPS-shaped rows x 3 tests in the jail at concurrency {c}: {elapsed:.2f} s, "
              f"{rates[c]:.2f} rows/s ({rates[c] / rates[1]:.2f}x of concurrency 1); 10 ms ticker lateness max "
              f"{max(lateness) * 1000:.1f} ms, median {statistics.median(lateness) * 1000:.2f} ms over "
              f"{len(lateness)} ticks")
    ratio = rates[concurrency] / rates[1]
    print(f"concurrency {concurrency} vs 1: {ratio:.2f}x on {default_concurrency()} cores (target >= 1.8x on 2 "
          f"cores: {'met' if ratio >= 1.8 else 'NOT met'})")


def swe_tool_calls(runs: int) -> None:
    import tempfile

    from benchmarks.swe import tool_jail
    from benchmarks.swe.jail_check import _Attempt, _mirror
    from benchmarks.swe.workspace import RepoWorkspaces

    base = Path(tempfile.mkdtemp(prefix="mpb-bench-swe-"))
    repos, commit = _mirror(base)
    row = Row(id="bench", dataset="swe", task={"repo": "mpb/check", "base_commit": commit}, gold={})
    attempt = _Attempt()
    jailed = RepoWorkspaces(repos)._checkout_sync(row, attempt, 0)
    bare_ws = RepoWorkspaces(repos)
    bare_ws._isolation = UNSAFE
    bare = bare_ws._checkout_sync(row, attempt, 0)
    assert jailed.jailed and not bare.jailed
    for name, args in (("shell_exec", {"command": "true"}), ("file_read", {"path": "f.txt"})):
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(runs):
            for checkout in (jailed, bare):
                t0 = time.perf_counter()
                text = tool_jail.run_repo_tool(checkout, name, args)
                times[checkout.jailed].append(time.perf_counter() - t0)
                assert text.startswith(("exit status: 0", "broken")), text
        j, b = (statistics.median(times[k]) * 1000 for k in (True, False))
        print(f"swe {name} (median of {runs}): jail {j:.1f} ms, bare {b:.1f} ms -> jail overhead {j - b:.1f} ms "
              f"per tool call (target <= 30 ms: {'met' if j - b <= 30 else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rows", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--swe-only", action="store_true", help="only the SWE tool profile (item 4)")
    args = parser.parse_args()
    if not args.swe_only:
        one_execution(args.runs)
        throughput(args.rows, args.concurrency)
    swe_tool_calls(args.runs)


if __name__ == "__main__":
    main()
