"""The job artifacts are typed (core.artifacts), their JSON Schemas are committed under schemas/, and every
artifact a real job writes matches both: the committed schema and the model, which reproduces the file exactly."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from core.artifacts import ARTIFACTS, SEALED, JobIdentity, Optimization
from core.canonical import canonical_json, seal
from core.errors import ArtifactError, JobIdentityError
from engine.aggregate.synthetic import grid_cells, synthetic_result
from engine.cards.export import export_card
from core.artifact_parse import parse_artifact
from engine.job.artifacts import read_artifact, write_sealed
from engine.job.schemas import SCHEMA_DIR, artifact_schema, schema_file
from tests.conftest import start_sim
from tests.engine.jobutil import run
from tests.fakebench import FakeBench

ROOT = Path(__file__).resolve().parents[2]


def committed(name: str) -> dict[str, Any]:
    return json.loads(schema_file(name).read_text(encoding="utf-8"))


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = committed(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def artifacts_of(job: Path) -> list[tuple[str, Path]]:
    found = [(name, job / f"{name}.json") for name in ARTIFACTS if name != "evaluation"]
    found += [("evaluation", path) for path in sorted((job / "evaluations").glob("*.json"))]
    return found


def check_job(job: Path) -> int:
    """Every artifact of `job` validates against its committed schema and its model; the model reproduces the
    file byte for byte (canonically) and, for a sealed one, its sha256. Returns how many were checked."""
    checked = 0
    for name, path in artifacts_of(job):
        assert path.is_file(), f"{path.name} missing"
        data = json.loads(path.read_text(encoding="utf-8"))
        errors = [e.message for e in validator(name).iter_errors(data)]
        assert errors == [], f"{path.name}: {errors[:3]}"
        body = {k: v for k, v in data.items() if k != "sha256"} if name in SEALED else data
        model = parse_artifact(ARTIFACTS[name], body, path.name)
        assert canonical_json(model.to_json()) == canonical_json(body), path.name
        if name in SEALED:
            assert seal(model.to_json())["sha256"] == data["sha256"], path.name
            assert read_artifact(path, ARTIFACTS[name]).artifact == model
        checked += 1
    return checked


def test_committed_schemas_are_exported_from_the_models():
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json")) == sorted(f"{n}.schema.json" for n in ARTIFACTS)
    for name in ARTIFACTS:
        assert committed(name) == artifact_schema(name), f"schemas/{name}.schema.json is stale: " \
                                                         "run python -m engine.job.schemas"
        schema = committed(name)
        assert schema["additionalProperties"] is False and ("sha256" in schema["required"]) == (name in SEALED)


@pytest.mark.slow
def test_every_artifact_of_a_cli_team_job_matches_its_schema(tmp_path):
    """A real `python -m engine job` (a 4-agent sequential team on BFCL, the built-in simulated endpoint)."""
    out = tmp_path / "job"
    done = subprocess.run([sys.executable, "-m", "engine", "job", "--cell", "task=bfcl,topology=sequential",
                           "--method", "identity", "--seed", "0", "--out", str(out), "--allow-any-cell"],
                          cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr
    assert check_job(out) == 5 + 2  # five artifacts, one evaluation per split (seed == incumbent)
    assert json.loads((out / "job.json").read_text())["cell"]["team_size"] == 4


@pytest.mark.slow
def test_every_artifact_of_a_reflecting_job_matches_its_schema(tmp_path):
    """gepa: a different incumbent (four evaluations), reflection usage in optimization.json and result.json."""
    bench = FakeBench(n_train=12, n_validation=20, n_test=30)
    server = start_sim(bench)
    try:
        result = run(tmp_path / "job", server.base_url, bench=bench, method="gepa", budget=120)
    finally:
        server.stop()
    assert check_job(tmp_path / "job") == 5 + 4
    assert result["optimization"]["usage"]["reflection"]["model_calls"] >= 1
    assert result["selection"]["selected_candidate"] == "incumbent"


@pytest.mark.slow
def test_synthetic_results_are_generated_through_the_result_model():
    rng = random.Random(5)
    results = validator("result")
    for cell in grid_cells()[:40]:
        data = synthetic_result(cell["grid"], 0, n_items=20, rng=rng, failure_counts=rng.random() < 0.5)
        assert list(results.iter_errors(data)) == []
        assert canonical_json(parse_artifact(ARTIFACTS["result"], data, "result.json").to_json()) == \
            canonical_json(data)


@pytest.mark.slow
@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d.update(unexpected=1), "unexpected"),
    (lambda d: d.update(schema="mas-promptbench-optimization/v2"), "schema"),
    (lambda d: d["cell"].update(team_size="1"), "cell.team_size"),
    (lambda d: d["budget"].pop("charged"), "budget.charged"),
    (lambda d: d.update(status="done"), "status"),
])
def test_a_sealed_artifact_that_does_not_match_its_model_is_refused(tmp_path, change, field):
    """Even with a valid seal (re-sealed after the change), reading it names the field; the schema agrees."""
    bench = FakeBench(n_train=4, n_validation=6, n_test=6)
    server = start_sim(bench)
    try:
        run(tmp_path / "job", server.base_url, bench=bench)
    finally:
        server.stop()
    path = tmp_path / "job" / "optimization.json"
    assert isinstance(read_artifact(path, Optimization).artifact, Optimization)
    data = {k: v for k, v in json.loads(path.read_text()).items() if k != "sha256"}
    change(data)
    write_sealed(path, data)
    with pytest.raises(ArtifactError, match=field.replace(".", r"\.")):
        read_artifact(path, Optimization)
    assert list(validator("optimization").iter_errors(json.loads(path.read_text()))) != []


def test_a_job_json_of_another_schema_version_is_refused(tmp_path):
    """On read (the model checks the version) and on resume (the identity differs in `schema`)."""
    bench = FakeBench(n_train=4, n_validation=6, n_test=6)
    server = start_sim(bench)
    try:
        run(tmp_path / "job", server.base_url, bench=bench)
        path = tmp_path / "job" / "job.json"
        data = {k: v for k, v in json.loads(path.read_text()).items() if k != "sha256"}
        write_sealed(path, {**data, "schema": "mas-promptbench-job/v2"})
        with pytest.raises(ArtifactError, match="schema"):
            read_artifact(path, JobIdentity)
        with pytest.raises(JobIdentityError, match="schema"):
            run(tmp_path / "job", server.base_url, bench=bench)
    finally:
        server.stop()


@pytest.mark.slow
def test_card_export_validates_the_job_artifacts_it_carries(tmp_path):
    """The exporter reads job.json and result.json through their models: a result.json with a field no model
    declares is refused naming it, before any card file is written."""
    bench = FakeBench(n_train=4, n_validation=6, n_test=6)
    server = start_sim(bench)
    try:
        run(tmp_path / "job", server.base_url, bench=bench)
    finally:
        server.stop()
    assert export_card(tmp_path / "job", tmp_path / "card").files and (tmp_path / "card").is_dir()
    path = tmp_path / "job" / "result.json"
    data = json.loads(path.read_text())
    data["test"]["extra_score"] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(ArtifactError, match=r"result\.json .*test\.extra_score"):
        export_card(tmp_path / "job", tmp_path / "card2")
    assert not (tmp_path / "card2").exists()
