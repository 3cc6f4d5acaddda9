"""bench/optimizer.py stays runnable from a clean checkout: for MAPRO and MASPO it runs a whole 600-rollout job against
the simulated endpoint in its own process and prints every figure the issue asks for (optimize wall against the
computed and measured endpoint floors, rollouts in flight, peak RSS) and the job's outcome; bad input is one line
and exit 2. Nothing here asserts a time: the delay is cut to 5 ms only to keep the run short."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[1]


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "bench/optimizer.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("method, stop, charged", [("mapro", "patience", 450), ("maspo", "budget", 600)])
def test_bench_prints_every_figure_for_the_method(method, stop, charged):
    proc = bench("--method", method, "--delay-ms", "5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert f"method={method} cell=task=bfcl,topology=sequential,team_size=4" in out
    assert f"stop={stop} charged={charged} " in out  # exact under the ledger: never past the 600 budget
    assert re.search(r"optimize wall / floor = \d+\.\d\d \(target <= 1\.30\)", out)
    assert re.search(r"optimize wall / measured floor = \d+\.\d\d", out)
    rollouts = float(re.search(r"in flight \(time-averaged\): rollouts (\d+\.\d+)", out).group(1))
    assert 1.0 < rollouts <= 64.0  # rollouts really run concurrently, never past --concurrency
    assert re.search(r"peak memory: max RSS \d+\.\d MiB", out)
    assert re.search(r"validation: baseline [\d.]+ incumbent [\d.]+ -> incumbent; test delta_pp [\d.]+", out)


def test_bench_off_grid_cell_is_one_line_and_exit_2():
    proc = bench("--method", "mapro", "--cell", "task=bfcl,topology=single,team_size=1")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("bench: off-grid cell:"), proc.stderr
    assert "Traceback" not in proc.stderr


def test_bench_missing_dataset_is_one_line_and_exit_2(monkeypatch):
    monkeypatch.delenv("HOTPOTQA_DATA_DIR", raising=False)
    proc = bench("--method", "mapro", "--cell", "task=hotpotqa,topology=sequential,team_size=4")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "HotpotQA data directory not given" in proc.stderr, proc.stderr
