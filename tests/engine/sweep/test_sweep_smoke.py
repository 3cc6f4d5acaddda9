"""`sweep run --smoke N` makes every job of the sweep a smoke run (job --smoke N): N rows per split, each method's
smallest budget, labelled and non-conformant; a smoke sweep dir is not a full sweep's (its settings differ)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.sweep.sweeputil import sweep

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")

SMALL = ["--runtime", "native", "--tasks", "bfcl", "--table", "3", "--methods", "gepa,identity", "--topologies",
         "single", "--seeds", "0"]


def test_sweep_run_smoke_passes_it_to_every_job(tmp_path: Path):
    sw = tmp_path / "sw"
    proc = sweep("run", "--sweep-dir", str(sw), *SMALL, "--simulated", "--smoke", "2", "--include-nonconformant")
    assert proc.returncode == 0, proc.stderr
    jobs = sorted(p.parent for p in (sw / "runs").rglob("job.json"))
    assert len(jobs) == 2
    budgets = {}
    for out in jobs:
        identity = json.loads((out / "job.json").read_text())
        assert identity["smoke"] == {"rows_per_split": 2} and "smoke_run" in identity["nonconformance_reasons"]
        assert identity["split_sizes"] == {"train": 2, "validation": 2, "test": 2}
        budgets[identity["method"]] = identity["budget"]
        test = json.loads((out / "test.json").read_text())
        assert len(test["example_ids"]) == 2
    assert budgets == {"identity": 1, "gepa": 8}  # each method's smallest budget for 2 validation rows
    assert "n=2" in proc.stdout  # aggregate, told to include non-conformant jobs
    full = sweep("run", "--sweep-dir", str(sw), *SMALL, "--simulated", "--no-aggregate")
    assert full.returncode == 2 and "other job settings" in full.stderr
