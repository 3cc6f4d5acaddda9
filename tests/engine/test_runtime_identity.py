"""job.json's runtime_implementation_id (protocol-v1 section 5.6: the condition names the runtime implementation;
section 6: job.json carries runtime_implementation_id, condition, condition_id): a framework job names its
framework runtime, in job.json and in its condition. A framework job's --out written before (when every job named
the native runtime) is refused in one line naming the fields that changed (section 6: "job.json must match
exactly"); native jobs are unchanged and resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.cell import parse_cell
from core.errors import JobIdentityError
from core.frameworks import FRAMEWORK_TABLE
from core.models import PromptBundle
from core.protocol import RUNTIME_IMPLEMENTATION_IDS
from engine.job import identity as identity_module
from engine.job.config import JobConfig
from engine.job.identity import build_identity, check_out_dir, write_identity

TABLE = [
    ("task=hotpotqa,topology=single", "mas-promptbench-engine/anyio-native-v1"),
    ("task=hotpotqa,topology=independent,framework=langgraph", "mas-promptbench-engine/langgraph-gateway-v1"),
    ("task=gpqa,topology=sequential,framework=crewai", "mas-promptbench-engine/crewai-gateway-v1"),
    ("task=math,topology=centralized,framework=autogen", "mas-promptbench-engine/autogen-gateway-v1"),
    ("task=bfcl,topology=decentralized,framework=openai_agents",
     "mas-promptbench-engine/openai-agents-sdk-gateway-v1"),
]
BUNDLE = PromptBundle(roles={"solver": "Solve it."})


def _cfg(cell: str, out: Path) -> JobConfig:
    return JobConfig(cell=parse_cell(cell), method="gepa", seed=0, out=out, allow_any_cell=True)


@pytest.mark.parametrize("cell,expected", TABLE)
def test_job_json_names_the_runtime_implementation(cell, expected, tmp_path):
    job = build_identity(_cfg(cell, tmp_path), BUNDLE, "0" * 64, {"train": 1}, "scorer:v1")
    assert job.runtime_implementation_id == expected, "protocol-v1 §5.6"
    assert job.condition["runtime_implementation_id"] == expected, "protocol-v1 §5.6"


def test_a_framework_job_written_under_the_native_id_is_refused_in_one_line(tmp_path, monkeypatch):
    cell = "task=hotpotqa,topology=independent,framework=langgraph"
    native_id = RUNTIME_IMPLEMENTATION_IDS["native"]
    labelled_before = dataclasses.replace(FRAMEWORK_TABLE["langgraph"], runtime_implementation_id=native_id)
    monkeypatch.setitem(FRAMEWORK_TABLE, "langgraph", labelled_before)  # the labelling before (its table entry)
    before = build_identity(_cfg(cell, tmp_path), BUNDLE, "0" * 64, {"train": 1}, "scorer:v1")
    monkeypatch.undo()
    assert before.runtime_implementation_id == native_id
    write_identity(tmp_path, before)
    now = build_identity(_cfg(cell, tmp_path), BUNDLE, "0" * 64, {"train": 1}, "scorer:v1")
    with pytest.raises(JobIdentityError) as refused:
        check_out_dir(tmp_path, now)
    message = str(refused.value)
    assert "\n" not in message
    assert "differs in: condition.runtime_implementation_id, condition_id, runtime_implementation_id)" in message
    assert identity_module.read_json(tmp_path / "job.json")["runtime_implementation_id"] == native_id  # untouched
