"""`job --smoke N` (issue 30): every phase on the first N rows of each split against the simulated endpoint,
labelled a smoke run (job.json, stdout line, card annotation, progress lines) and non-conformant, so `aggregate`
skips it unless --include-nonconformant; a smoke --out is never resumed as a full job nor the reverse; a resumed
job says what it replayed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

ROOT = Path(__file__).resolve().parents[2]
CELL = ["--cell", "task=bfcl,topology=single", "--seed", "0"]


def engine(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=240, env={**os.environ, "PYTHONPATH": str(ROOT)})


def job(out: Path, *extra: str, method: str = "identity") -> subprocess.CompletedProcess[str]:
    return engine("job", *CELL, "--method", method, "--out", str(out), *extra)


@pytest.fixture(scope="module")
def smoke_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out = tmp_path_factory.mktemp("smoke") / "job"
    return out, job(out, "--smoke", "3")


def _bfcl_splits() -> dict[str, list[str]]:
    from benchmarks.registry import get_benchmark

    splits = get_benchmark("bfcl").splits()
    return {name: list(splits.ids(name)) for name in ("train", "validation", "test")}


def test_a_smoke_job_runs_every_phase_on_n_rows_and_is_labelled(smoke_job):
    out, proc = smoke_job
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout)
    assert line["status"] == "completed" and line["smoke"] == 3 and line["protocol_conformant"] is False
    for name in ("optimization.json", "selection.json", "test.json", "result.json"):
        assert (out / name).exists(), name
    identity = json.loads((out / "job.json").read_text())
    assert identity["smoke"] == {"rows_per_split": 3}
    assert identity["protocol_conformant"] is False and "smoke_run" in identity["nonconformance_reasons"]
    assert identity["split_sizes"] == {"train": 3, "validation": 3, "test": 3}
    assert identity["budget"] == 1  # identity's smallest budget (protocol 8.9), announced on stderr
    assert "smoke run: every phase on the first 3 rows" in proc.stderr and "budget 1" in proc.stderr
    progress = [x for x in proc.stderr.splitlines() if x.startswith("progress:")]
    assert progress and all(x.startswith("progress: [smoke 3] ") for x in progress)
    # the evaluations hold exactly the first 3 rows of their split, in split order
    splits = _bfcl_splits()
    evaluations = [json.loads(p.read_text()) for p in sorted((out / "evaluations").glob("*.json"))]
    assert {e["identity"]["split"] for e in evaluations} == {"validation", "test"}
    for e in evaluations:
        ids = [r["example_id"] for r in e["records"]]
        assert ids == splits[e["identity"]["split"]][:3]
    test = json.loads((out / "test.json").read_text())
    assert test["example_ids"] == splits["test"][:3]
    selection = json.loads((out / "selection.json").read_text())
    assert selection["ordered_validation_ids"] == splits["validation"][:3]
    # the card's job annotation carries the label
    with sqlite3.connect(out / "card.sqlite") as conn:
        payloads = [json.loads(p) for (p,) in conn.execute(
            "SELECT payload FROM annotations WHERE namespace='mpb.job'")]
    assert payloads and payloads[0]["smoke"] == {"rows_per_split": 3} and "smoke_run" in \
        payloads[0]["nonconformance_reasons"]


def test_aggregate_skips_a_smoke_job_unless_told(smoke_job):
    out, proc = smoke_job
    assert proc.returncode == 0, proc.stderr
    skipped = engine("aggregate", str(out))
    assert skipped.returncode == 1 and "non-conformant" in skipped.stderr
    included = engine("aggregate", str(out), "--include-nonconformant")
    assert included.returncode == 0, included.stderr
    assert "identity\tbfcl\tsingle" in included.stdout and "n=3" in included.stdout


def test_a_smoke_out_is_never_resumed_as_a_full_job_nor_the_reverse(smoke_job, tmp_path):
    out, proc = smoke_job
    assert proc.returncode == 0, proc.stderr
    full = job(out)
    assert full.returncode == 2 and full.stderr.strip().count("\n") == 0, full.stderr
    assert "holds a smoke run (smoke.rows_per_split=3), not a full job (differs in: smoke)" in full.stderr
    other = job(out, "--smoke", "2")
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1
    assert "smoke.rows_per_split=2" in other.stderr
    plain = tmp_path / "full"
    assert job(plain, "--budget", "1", "--phase", "optimize").returncode == 0
    assert "smoke" not in json.loads((plain / "job.json").read_text())  # an ordinary job.json is unchanged
    refused = job(plain, "--smoke", "3", "--phase", "optimize")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "holds a full job, not a smoke run (smoke.rows_per_split=3)" in refused.stderr


@pytest.mark.parametrize("value,words", [("0", "--smoke must be >= 1"), ("-1", "--smoke"),
                                         ("51", "larger than the validation split of task=bfcl (50 rows)")])
def test_a_smoke_size_below_1_or_past_a_split_is_one_line_exit_2(tmp_path, value, words):
    proc = job(tmp_path / "job", "--smoke", value)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "job").exists()


def test_a_gepa_smoke_job_completes_at_its_smallest_budget_and_a_resume_says_what_it_replays(tmp_path):
    out = tmp_path / "gepa"
    first = job(out, "--smoke", "3", method="gepa")
    assert first.returncode == 0, first.stderr
    line = json.loads(first.stdout)
    assert line["smoke"] == 3 and line["status"] == "completed"
    identity = json.loads((out / "job.json").read_text())
    assert identity["budget"] == 9  # gepa's smallest for 3 validation rows: 3 + one 6-rollout proposal
    assert line["charged"] <= 9
    assert "resumed:" not in first.stderr
    # as if killed after optimization's records were written: every sealed artifact after them is gone
    for name in ("optimization.json", "selection.json", "test.json", "result.json"):
        (out / name).unlink()
    for path in (out / "evaluations").glob("*.json"):
        path.unlink()
    again = job(out, "--smoke", "3", method="gepa")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == line
    resumed = [x for x in again.stderr.splitlines() if x.startswith("resumed:")]
    charged, evaluated = line["charged"], 6  # the optimize rollouts, then 3 validation + 3 test rollouts
    assert resumed == [f"resumed: {charged + evaluated} rollouts and 1 model calls replayed from the store"], \
        again.stderr  # the one reflection call of the proposal
    assert "replayed=3" in again.stderr
