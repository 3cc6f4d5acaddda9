"""job.json's method_implementation_id (protocol-v1 section 6: "job.json must match exactly" on resume): a method
whose implementation changed (`implementation_version` > 1) names it in job.json, so a job started by the earlier
implementation is refused in one line naming the change instead of resuming with mixed behaviour; a method that
did not change writes no such field, so its job.json (and every existing job of it) is what it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cell import parse_cell
from core.errors import ArtifactError, JobIdentityError
from core.models import PromptBundle
from engine.job.config import JobConfig
from engine.job.identity import build_identity, check_out_dir, write_identity
from optimizers.registry import METHODS, method_implementation_id

BUNDLE = PromptBundle(roles={"solver": "Solve it."})
CELL = "task=hotpotqa,topology=single"


def _identity(method: str, out: Path):
    cfg = JobConfig(cell=parse_cell(CELL), method=method, seed=0, out=out, allow_any_cell=True)
    return build_identity(cfg, BUNDLE, "0" * 64, {"train": 1}, "scorer:v1")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_field_is_present_exactly_for_a_changed_method(method, tmp_path):
    version = int(getattr(METHODS[method], "implementation_version", 1))
    written = _identity(method, tmp_path).to_json()
    if version > 1:
        assert written["method_implementation_id"] == f"{method}:native:v{version}"
    else:
        assert "method_implementation_id" not in written  # unchanged methods: job.json as before
        assert method_implementation_id(method) is None


def test_a_job_of_the_earlier_implementation_is_refused_in_one_line(tmp_path, monkeypatch):
    cls = METHODS["gepa"]
    monkeypatch.setattr(cls, "implementation_version", 1, raising=False)
    before = _identity("gepa", tmp_path)
    write_identity(tmp_path, before)
    with pytest.raises(ArtifactError, match="store lost"):  # same implementation: identity matches, the next
        check_out_dir(tmp_path, _identity("gepa", tmp_path))  # check is the (here absent) store
    monkeypatch.setattr(cls, "implementation_version", 2, raising=False)
    with pytest.raises(JobIdentityError) as refused:
        check_out_dir(tmp_path, _identity("gepa", tmp_path))
    message = str(refused.value)
    assert "\n" not in message
    assert "differs in: method_implementation_id)" in message
