"""A 12-job sweep on two simulated endpoints: concurrent, results identical to the jobs run one by one, no request
sent twice, the seed bundle's validation and test evaluations sent once per condition and seed, status table."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter

import pytest

from tests.engine.sweep.sweeputil import (
    SELECTION,
    duplicates,
    endpoint_args,
    model_requests,
    plan_keys,
    results,
    run_one_by_one,
    start_servers,
    sweep,
)

pytestmark = pytest.mark.slow  # end-to-end sweeps: left out of the fast loop (-m "not slow")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    servers = start_servers(2)
    alone = start_servers(1)[0]
    try:
        proc = sweep("run", "--sweep-dir", str(root / "sw"), *SELECTION, *endpoint_args(servers), "--limit", "8",
                     "--no-aggregate")
        jobs = plan_keys(*SELECTION)
        slices = run_one_by_one(jobs, root / "alone", alone)
        yield {"root": root, "proc": proc, "jobs": jobs, "logs": [s.log for s in servers], "slices": slices}
    finally:
        for s in servers + [alone]:
            s.stop()


def test_sweep_finishes_every_job_concurrently(swept):
    proc = swept["proc"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    running = [int(m) for m in re.findall(r"(\d+) running", proc.stderr)]
    assert max(running) >= 2, "jobs ran one at a time"
    db = sqlite3.connect(str(swept["root"] / "sw" / "sweep.sqlite"))
    assert Counter(r[0] for r in db.execute("SELECT status FROM jobs")) == {"finished": 12}
    assert all(len(log) > 0 for log in swept["logs"]), "both endpoints serve the sweep"


def test_results_identical_to_the_jobs_run_one_by_one(swept):
    keys = [j["key"] for j in swept["jobs"]]
    assert len(keys) == 12
    together = results(swept["root"] / "sw" / "runs", keys)
    alone = results(swept["root"] / "alone", keys)
    assert together == alone
    for k in keys:  # every other artifact too
        for name in ("selection.json", "test.json"):
            a = json.loads((swept["root"] / "sw" / "runs" / k / name).read_text())
            b = json.loads((swept["root"] / "alone" / k / name).read_text())
            assert a == b, (k, name)


def test_no_request_sent_twice_and_shared_evaluations_sent_once(swept):
    sweep_entries = swept["logs"][0] + swept["logs"][1]
    assert duplicates(sweep_entries) == Counter()  # no faults injected: no retries, so every key exactly once
    # one by one, each job sends its seed bundle's validation and test rollouts itself; the sweep sends them once
    per_job = {k: {e["key"] for e in model_requests(v)} for k, v in swept["slices"].items()}
    across_jobs = Counter(key for keys in per_job.values() for key in keys)
    repeated = {k for k, n in across_jobs.items() if n > 1}
    assert repeated, "the one-by-one jobs share no evaluation: the test would show nothing"
    sent = Counter(e["key"] for e in model_requests(sweep_entries))
    assert all(sent[k] == 1 for k in repeated)
    assert set(sent) == set(across_jobs)  # the same requests, just not repeated
    # identity and gepa on one condition and seed: identity sends nothing gepa's seed evaluations did not
    identity = per_job["identity/bfcl/single/qwen/0"]
    assert identity <= per_job["gepa/bfcl/single/qwen/0"] and len(identity) == 150  # 50 validation + 100 test


def test_each_card_holds_its_shared_evaluations_with_provenance(swept):
    runs = swept["root"] / "sw" / "runs"
    sources = Counter()
    for j in swept["jobs"]:
        db = sqlite3.connect(str(runs / j["key"] / "card.sqlite"))
        notes = [json.loads(p) for (p,) in db.execute(
            "SELECT payload FROM annotations WHERE namespace='mpb.shared_evaluation'")]
        evaluations = {r[0] for r in db.execute("SELECT DISTINCT evaluation_id FROM rollouts "
                                                "WHERE evaluation_id IS NOT NULL")}
        assert {n["evaluation_id"] for n in notes} <= evaluations  # the rollouts are in the card either way
        sources.update(n["source"] for n in notes)
        assert all(n["calls_live"] == 0 for n in notes if n["source"] == "shared")
    assert sources["shared"] >= 12 and sources["computed"] >= 12


def test_status_table(swept):
    proc = sweep("status", "--sweep-dir", str(swept["root"] / "sw"))
    assert proc.returncode == 0 and "finished=12" in proc.stdout
    assert "gepa/bfcl/independent/qwen/2" in proc.stdout and "delta_pp=" in proc.stdout
    missing = sweep("status", "--sweep-dir", str(swept["root"] / "nothing"))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_status_counts_endpoint_work_once(swept):
    """`sweep status` totals count endpoint work: the seed bundle's evaluations of a condition and seed are answered
    by the shared cache for all but one of its jobs (`shared` in their snapshots), so done == planned == the live
    rollouts of all jobs, not their sum."""
    from engine.sweep.cost import split_sizes

    proc = sweep("status", "--sweep-dir", str(swept["root"] / "sw"), "--json")
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    snaps = {j["key"]: j["progress"] for j in st["jobs"]}
    assert all(s is not None for s in snaps.values())
    live = sum(s["rollouts"] - s["replayed"] - s["shared"] for s in snaps.values())
    assert st["rollouts_done"] == st["rollouts_planned"] == live
    assert live < sum(s["rollouts"] for s in snaps.values())
    _, n_val, n_test = split_sizes("bfcl")
    groups: Counter[tuple[str, int]] = Counter()
    for j in st["jobs"]:
        groups[(j["cell"], j["seed"])] += j["progress"]["shared"]
    assert groups and set(groups.values()) == {n_val + n_test}  # one job per condition and seed ran them
