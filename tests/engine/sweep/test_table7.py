"""Table 7 tagging: protocol-v1 section 4, table 7 = PRIMARY x application x all 5 topologies, LangGraph,
freeform, size 4, "repeated with Llama-3.1-8B-Instruct" -- so the Qwen configurations carry table 7 as well as
their Llama repeats (issue 35 item 6). One definition (core/cell.py `source_tables`) feeds the sweep's grid, the
synthetic results and job.json; these tests hold all three to it.

Resume (section 6: "job.json must match exactly"): source_tables is a job.json field, so it is in the sealed
job.json's sha256, but not in cell_id or the condition (section 5.6), so no evaluation id moves. job.json took
its tables from `source_tables` before this change too (it already listed 7 for Qwen), so an existing job's
job.json is unchanged and it resumes; were a job's tables to change, its old --out is refused in one line naming
source_tables.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from core.cell import grid_tables, parse_cell, source_tables
from core.errors import JobIdentityError
from core.models import PromptBundle
from engine.aggregate.synthetic import grid_cells
from engine.job import identity as identity_module
from engine.job.config import JobConfig
from engine.job.identity import build_identity, check_out_dir, write_identity
from engine.sweep.grid import protocol_grid
from engine.sweep.plan import Filters, jobs_for, select
from optimizers.registry import METHODS

ROOT = Path(__file__).resolve().parents[3]
S4 = "protocol-v1 §4 table 7"
LG = "framework=langgraph"

# (method, cell, tables): what the sweep, the synthetic grid and job.json must all say
TABLE = [
    ("gepa", f"task=hotpotqa,topology=single,{LG}", [2, 3, 6, 7], S4 + ": Qwen single (gepa/mipro only)"),
    ("gepa", f"task=hotpotqa,topology=single,{LG},model=llama", [7], S4 + ": its Llama repeat"),
    ("mipro", f"task=lcb,topology=independent,{LG}", [2, 3, 4, 5, 6, 7], S4 + ": Qwen independent"),
    ("mipro", f"task=lcb,topology=independent,{LG},model=llama", [7], S4 + ": Llama independent"),
    ("mapro", f"task=bfcl,topology=sequential,{LG}", [3, 4, 5, 6, 7], S4 + ": Qwen sequential on LangGraph"),
    ("maspo", f"task=bfcl,topology=decentralized,{LG},model=llama", [7], S4 + ": Llama decentralized"),
    ("maspo", f"task=hotpotqa,topology=centralized,{LG}", [3, 4, 5, 6, 7], S4 + ": Qwen centralized"),
    ("gepa", "task=hotpotqa,topology=sequential,framework=crewai", [2], S4 + ": LangGraph only (CrewAI is table 2)"),
    ("gepa", f"task=gpqa,topology=independent,{LG}", [2, 3], S4 + ": application tasks only"),
    ("gepa", f"task=lcb,topology=independent,{LG},team_size=8", [5], S4 + ": team size 4 only"),
    ("gepa", f"task=lcb,topology=independent,{LG},communication=structured_soft", [4], S4 + ": freeform only"),
    ("hivemind", f"task=lcb,topology=independent,{LG}", [6], S4 + ": PRIMARY methods only"),
    ("mapro", f"task=hotpotqa,topology=single,{LG},model=llama", [], S4 + ": single only for gepa/mipro"),
]


def _config_tables(method: str, cell_text: str) -> list[int] | None:
    cell = parse_cell(cell_text)
    key = (method, cell.task, cell.topology, cell.framework, cell.communication, cell.team_size, cell.task_model)
    for c in protocol_grid():
        if (c.method, c.task, c.topology, c.framework, c.communication, c.team_size, c.model) == key:
            return list(c.tables)
    return None


def _identity(method: str, cell_text: str) -> dict[str, object]:
    cfg = JobConfig(cell=parse_cell(cell_text), method=method, seed=0, out=Path("unused"), allow_any_cell=True)
    return build_identity(cfg, PromptBundle(roles={"solver": "Solve it."}), "0" * 64, {"train": 1},
                          "scorer:v1").to_json()


@pytest.mark.parametrize("method,cell,tables,cite", TABLE, ids=[f"{r[0]}:{r[1]}" for r in TABLE])
def test_sweep_grid_synthetic_grid_and_job_json_carry_the_same_tables(method, cell, tables, cite):
    assert source_tables(method, parse_cell(cell)) == tables, cite
    assert (_config_tables(method, cell) or []) == tables, cite
    if method in METHODS:  # job.json claims what the engine implements
        assert _identity(method, cell)["source_tables"] == tables, cite
        assert grid_tables(method, parse_cell(cell), tuple(METHODS)) == tables, cite


def test_table7_is_the_qwen_configurations_and_their_llama_repeats():
    """protocol-v1 §4: 54 Qwen + 54 Llama configurations, 324 jobs over the three seeds."""
    seven = select(Filters(tables=(7,)))
    assert Counter(c.model for c in seven) == {"qwen": 54, "llama": 54}
    assert len(jobs_for(seven, (0, 1, 2), {})) == 324
    twins = {(c.method, c.task, c.registry_key) for c in seven if c.model == "qwen"}
    assert twins == {(c.method, c.task, c.registry_key) for c in seven if c.model == "llama"}
    assert all(c.framework == "langgraph" and c.communication == "freeform" for c in seven)
    assert len(protocol_grid()) == 612  # no configuration added: the Qwen half was already in tables 3 and 6


def test_every_list_of_the_grid_is_source_tables():
    """protocol-v1 §4: the sweep's grid and the synthetic grid are `source_tables` of each configuration."""
    for c in protocol_grid():
        cell = parse_cell(c.cell_text())
        assert list(c.tables) == source_tables(c.method, cell), c
    synthetic = {(e["grid"]["method"], e["registry_key"], e["grid"]["task"], e["grid"]["task_model"]):
                 e["source_tables"] for e in grid_cells()}
    assert synthetic == {(c.method, c.registry_key, c.task, c.model): list(c.tables) for c in protocol_grid()}


@pytest.mark.slow
def test_sweep_plan_table7_lists_324_jobs():
    """protocol-v1 §4 table 7 through the CLI: `sweep plan --table 7`."""
    proc = subprocess.run([sys.executable, "-m", "engine", "sweep", "plan", "--table", "7", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["counts"]["jobs"] == 324
    qwen = [j for j in plan["jobs"] if "model=qwen" in j["cell"]]
    assert len(qwen) == 162 and all(7 in j["tables"] for j in plan["jobs"])


def test_source_tables_enter_job_json_but_no_identity_hash(tmp_path, monkeypatch):
    """protocol-v1 §5.6 / §6: cell_id and condition_id do not hold source_tables; job.json does, so an --out
    written under other tables is refused in one line naming source_tables."""
    cell = f"task=hotpotqa,topology=independent,{LG}"
    now = _identity("gepa", cell)
    monkeypatch.setattr(identity_module, "grid_tables", lambda *a: [2, 3, 4, 5, 6])  # the tagging before
    cfg = JobConfig(cell=parse_cell(cell), method="gepa", seed=0, out=tmp_path, allow_any_cell=True)
    before = build_identity(cfg, PromptBundle(roles={"solver": "Solve it."}), "0" * 64, {"train": 1}, "scorer:v1")
    monkeypatch.undo()
    assert before.source_tables == [2, 3, 4, 5, 6] and now["source_tables"] == [2, 3, 4, 5, 6, 7]
    old = before.to_json()
    assert {k for k in now if now[k] != old[k]} == {"source_tables"}
    assert (old["cell_id"], old["condition_id"]) == (now["cell_id"], now["condition_id"])
    write_identity(tmp_path, before)
    current = build_identity(cfg, PromptBundle(roles={"solver": "Solve it."}), "0" * 64, {"train": 1}, "scorer:v1")
    with pytest.raises(JobIdentityError) as refused:
        check_out_dir(tmp_path, current)
    message = str(refused.value)
    assert "\n" not in message and "differs in: source_tables)" in message
