"""A job end to end against the simulated endpoint: artifacts, sealing, reuse, faults."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from core.canonical import verify_seal
from core.errors import JobIdentityError, SealedSplitError
from engine.job.data import JobData
from engine.sim.faults import FaultPlan
from tests.conftest import start_sim
from tests.engine.jobutil import comparable, run, stored_sim_keys
from tests.fakebench import FakeBench


def bench() -> FakeBench:
    return FakeBench(n_train=12, n_validation=20, n_test=30)


def test_identity_job_writes_sealed_artifacts_and_reuses_evaluations(tmp_path):
    server = start_sim(bench())
    try:
        result = run(tmp_path / "job", server.base_url)
        log = server.log
    finally:
        server.stop()
    out = tmp_path / "job"
    for name in ("job.json", "optimization.json", "selection.json", "test.json"):
        assert verify_seal(json.loads((out / name).read_text())), name
    selection = json.loads((out / "selection.json").read_text())
    assert selection["test_exposed"] is False and selection["fallback_reason"] == "validation_tie"
    assert selection["selected_candidate"] == "seed"
    # seed == incumbent: each split is evaluated once (content-addressed reuse), 20 validation + 30 test rows
    assert len(log) == 50 and len({e["key"] for e in log}) == 50
    test = result["test"]
    assert test["delta_pp"] == 0.0 and test["valid_for_aggregation"] is True
    assert test["failure_counts"]["baseline"]["n"] == 30
    counts = test["failure_counts"]["baseline"]
    assert counts["usable"] == counts["success"] + counts["semantic_failures"] == 30
    assert result["optimization"]["budget"]["charged"] == 0
    assert result["optimization"]["stop_reason"] == "identity_no_search"
    assert (out / "optimization" / "learning_curve.jsonl").read_text().count("\n") == 61
    assert result["protocol_conformant"] is False  # a non-canonical task model id


def test_faults_cost_attempts_never_scores(tmp_path):
    clean = start_sim(bench())
    try:
        expected = run(tmp_path / "clean", clean.base_url)
    finally:
        clean.stop()
    plan = FaultPlan(rates={"http_500": 0.04, "http_503": 0.03, "http_429": 0.03, "reset": 0.03,
                            "malformed_json": 0.03, "empty_choices": 0.02, "context_overflow": 0.01,
                            "slow": 0.01}, seed=3, slow_s=4.0)
    faulty = start_sim(bench(), faults=plan)
    try:
        got = run(tmp_path / "faulty", faulty.base_url)
        log = faulty.log
    finally:
        faulty.stop()
    faulted = [e for e in log if e["fault"]]
    assert len(faulted) >= 5, "the plan should inject faults"
    assert comparable(got) == comparable(expected)
    # a whole job sends no request twice except same-seed retries after a fault
    ok_serves = Counter(e["key"] for e in log if e["status"] == 200 and not e["fault"])
    assert max(ok_serves.values()) == 1
    for key, n in Counter(e["key"] for e in log).items():
        if n > 1:
            entries = [e for e in log if e["key"] == key]
            assert all(e["fault"] for e in entries[:-1])
    assert stored_sim_keys(tmp_path / "faulty" / "card.sqlite") == set(ok_serves)


def test_test_rows_are_sealed_until_a_verified_selection_exists(tmp_path):
    data = JobData(bench(), None, tmp_path)
    with pytest.raises(SealedSplitError, match="no selection.json"):
        data.test()
    server = start_sim(bench())
    try:
        run(tmp_path / "job", server.base_url)
        sel_path = tmp_path / "job" / "selection.json"
        sel = json.loads(sel_path.read_text())
        sel["selected_candidate"] = "incumbent"  # tamper
        sel_path.write_text(json.dumps(sel))
        with pytest.raises(SealedSplitError, match="sha256"):
            JobData(bench(), None, tmp_path / "job").test()
        (tmp_path / "job" / "test.json").unlink()
        from core.errors import ArtifactError

        with pytest.raises(ArtifactError, match="selection.json"):
            run(tmp_path / "job", server.base_url)
    finally:
        server.stop()


def test_out_holding_another_job_is_refused(tmp_path):
    server = start_sim(bench())
    try:
        run(tmp_path / "job", server.base_url, seed=1)
        before = sorted(p.name for p in (tmp_path / "job").iterdir())
        with pytest.raises(JobIdentityError, match="holds another job"):
            run(tmp_path / "job", server.base_url, seed=2)
        assert sorted(p.name for p in (tmp_path / "job").iterdir()) == before
    finally:
        server.stop()


def test_rerun_of_a_finished_job_sends_nothing(tmp_path):
    server = start_sim(bench())
    try:
        first = run(tmp_path / "job", server.base_url)
        n = len(server.log)
        second = run(tmp_path / "job", server.base_url)
        assert len(server.log) == n
    finally:
        server.stop()
    assert comparable(first) == comparable(second)


def test_a_second_process_on_the_same_out_is_refused(tmp_path):
    import fcntl

    from core.errors import UsageError

    out = tmp_path / "job"
    out.mkdir()
    with open(out / ".job.lock", "a+") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        server = start_sim(bench())
        try:
            with pytest.raises(UsageError, match="another process is running"):
                run(out, server.base_url)
            assert server.log == [] or all(e["kind"] != "answer" for e in server.log)
        finally:
            server.stop()
    assert not (out / "job.json").exists()
