"""Conformance from evidence (engine/job/evidence.py): what each endpoint says about itself is recorded in job.json
and the card, and a job is conformant only when nothing recorded contradicts it.

`serve-sim` started on its own (a real subprocess) and passed as `--task-endpoint ... --model-id Qwen/Qwen3.5-9B`
is recorded as simulated, the job is not conformant, and `aggregate` skips it without `--include-nonconformant`.
in_grid and the nonconformance reasons agree on every cell. A job.json written before endpoints reported
themselves stays resumable; a conformant job resumed against a simulated endpoint is refused in one line."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.errors import UsageError
from core.canonical import seal
from core.cell import TASKS, TOPOLOGIES, parse_cell
from engine.job.config import build_config
from engine.job.identity import build_identity
from engine.sim.build import build_policy
from engine.sim.server import SimServer
from optimizers.registry import METHODS
from tests.engine.cli.hostile import assert_refused, engine, job
from tests.optimizers.fakes import seed_bundle

ROOT = Path(__file__).resolve().parents[2]
QWEN = "Qwen/Qwen3.5-9B"
LANGGRAPH_SINGLE = "task=bfcl,topology=single,framework=langgraph"


@contextmanager
def serve_sim() -> Iterator[str]:
    """`python -m engine serve-sim` in its own process; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "engine", "serve-sim", "--port", "0", "--tasks", "bfcl"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def card_job_note(out: Path) -> dict:
    conn = sqlite3.connect(str(out / "card.sqlite"))
    try:
        (payload,) = conn.execute("SELECT payload FROM annotations WHERE namespace = 'mpb.job'").fetchone()
    finally:
        conn.close()
    return json.loads(payload)


@pytest.mark.slow
def test_serve_sim_as_a_task_endpoint_is_recorded_and_not_conformant(tmp_path: Path):
    out = tmp_path / "runs" / "job"
    with serve_sim() as url:
        proc = job(out, "--task-endpoint", url, "--model-id", QWEN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ident = json.loads((out / "job.json").read_text())
    assert ident["task_model_id"] == QWEN and ident["endpoint_kind"] == "openai-compatible"
    assert ident["protocol_conformant"] is False
    assert "task_endpoint_reported_simulated" in ident["nonconformance_reasons"]
    (report,) = ident["endpoint_reports"]
    assert report == {"role": "task endpoint", "index": 0, "model_id": QWEN, "simulated": True,
                      "reported_model": report["reported_model"]}
    assert url.split("//")[1].split("/")[0] not in json.dumps(ident)  # no host name in the artifact
    note = card_job_note(out)
    assert note["endpoint_reports"] == ident["endpoint_reports"] and note["protocol_conformant"] is False
    result = json.loads((out / "result.json").read_text())
    assert result["protocol_conformant"] is False
    skipped = engine("aggregate", str(tmp_path / "runs"))
    assert skipped.returncode == 1 and "non-conformant" in skipped.stderr, skipped.stderr
    kept = engine("aggregate", str(tmp_path / "runs"), "--include-nonconformant")
    assert kept.returncode == 0, kept.stderr


@pytest.mark.slow
def test_a_job_recorded_conformant_resumed_against_a_simulated_endpoint_is_refused(tmp_path: Path):
    """job.json as an older engine wrote it (no endpoint_reports, no evidence reason, conformant): resumable
    against what it started with, refused against an endpoint that reports itself simulated."""
    conformant, native = tmp_path / "conformant", tmp_path / "native"
    with SimServer(build_policy(["bfcl"])) as sim:
        for out, cell in ((conformant, LANGGRAPH_SINGLE), (native, "task=bfcl,topology=single")):
            first = job(out, "--task-endpoint", sim.base_url, "--model-id", QWEN, "--phase", "optimize", cell=cell)
            assert first.returncode == 0, first.stderr[-3000:]
            ident = json.loads((out / "job.json").read_text())
            assert ident["nonconformance_reasons"][-1:] == ["task_endpoint_reported_simulated"]
            body = {k: v for k, v in ident.items() if k not in ("sha256", "endpoint_reports")}
            reasons = body["nonconformance_reasons"][:-1]
            (out / "job.json").write_text(json.dumps(seal({**body, "nonconformance_reasons": reasons,
                                                           "protocol_conformant": not reasons})))
        refused = job(conformant, "--task-endpoint", sim.base_url, "--model-id", QWEN, cell=LANGGRAPH_SINGLE)
        resumed = job(native, "--task-endpoint", sim.base_url, "--model-id", QWEN)
    assert_refused(refused, "recorded protocol-conformant", "task_endpoint_reported_simulated")
    # identity on a native cell is never conformant: the old job.json resumes and is kept as it was written
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    kept = json.loads((native / "job.json").read_text())
    assert "endpoint_reports" not in kept and kept["nonconformance_reasons"] == ["native_runtime"]


def test_conformance_is_lost_on_resume_never_regained(tmp_path: Path):
    """The rule itself (check_resumed_evidence), on an identity conformant but for the endpoint."""
    from core.artifacts import JobIdentity
    from core.errors import UsageError, JobIdentityError
    from engine.job.evidence import check_resumed_evidence

    cfg = build_config(cell="task=bfcl,topology=single,framework=langgraph", method="gepa", seed=0,
                       out=str(tmp_path / "j"), budget=600, task_endpoints=["http://127.0.0.1:9/v1"],
                       model_id=QWEN, data_dir=None, concurrency=1, reflection_endpoint="http://127.0.0.1:9/v1",
                       reflection_model="Qwen/Qwen3.5-122B-A10B-FP8")
    ident = build_identity(cfg, seed_bundle(("solver",)), "0" * 64, {"train": 1}, scorer_id="s")
    assert ident.protocol_conformant, ident.nonconformance_reasons
    now = ident.model_copy(update={"nonconformance_reasons": ["task_endpoint_reported_simulated"],
                                   "protocol_conformant": False})
    with pytest.raises(JobIdentityError, match="recorded protocol-conformant") as found:
        check_resumed_evidence(ident, now)
    assert "\n" not in str(found.value)
    check_resumed_evidence(now, ident)  # recorded non-conformant: stays so, resumes
    assert JobIdentity.model_validate(ident.to_json()).to_json() == ident.to_json()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_in_grid_and_the_off_grid_reason_never_disagree(tmp_path: Path, method: str):
    frameworks = ("native", "langgraph")
    for task in TASKS[:3] + ("bfcl",):
        for topology in TOPOLOGIES:
            for framework in frameworks:
                text = f"task={task},topology={topology},framework={framework}"
                try:
                    cfg = build_config(cell=text, method=method, seed=0, out=str(tmp_path / "j"), budget=600,
                                       task_endpoints=[], model_id=None, data_dir=None, concurrency=1,
                                       allow_any_cell=True)
                except UsageError as exc:  # a method needing coalition masks refuses cells that cannot mask
                    assert method == "hivemind" and "coalition masking" in str(exc), (text, method, exc)
                    assert topology == "single" or framework != "native"
                    continue
                ident = build_identity(cfg, seed_bundle(("solver",)), "0" * 64, {}, scorer_id="s")
                off = "off_grid_cell" in ident.nonconformance_reasons
                assert off == (not ident.in_grid), (text, method, ident.in_grid, ident.nonconformance_reasons)
                assert ident.protocol_conformant == (not ident.nonconformance_reasons)
                assert parse_cell(text).framework == framework
