"""job.json: the sealed identity of a job, and the resume check against an existing --out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.artifacts import BundleJson, CellFields, JobIdentity, SmokeRun
from core.canonical import content_hash
from core.cell import grid_tables, on_grid, registry_key
from core.contracts import JOB_CONTRACT_VERSION
from core.errors import ArtifactError, JobIdentityError, UsageError
from core.models import PromptBundle
from core.protocol import (
    CANONICAL_REFLECTION_MODEL,
    FULL_BUDGET,
    PROTOCOL_HASH,
    PROTOCOL_ID,
    TASK_MODELS,
    cell_id,
    condition,
    runtime_implementation_id,
)
from core.methods import method_options
from engine.job.artifacts import Sealed, read_json, write_artifact
from engine.job.config import JobConfig
from engine.job.evidence import without_evidence
from engine.job.smoke import SMOKE_REASON
from engine.store.check import check_store_file, holds_no_records
from engine.store.schema import creating_path
from optimizers.registry import implemented, method_implementation_id


def claimed_tables(cfg: JobConfig) -> list[int]:
    """The grid tables the job feeds (section 4); an off-grid cell is refused unless --allow-any-cell."""
    c = cfg.cell
    tables = grid_tables(cfg.method, c, implemented())
    if not on_grid(cfg.method, c, implemented()) and not cfg.allow_any_cell:
        raise UsageError(f"off-grid cell: task={c.task},topology={c.topology},team_size={c.team_size},"
                         f"communication={c.communication},model={c.task_model} with method {cfg.method} is in no "
                         "grid table this engine implements; pass --allow-any-cell to run it (non-conformant)")
    return tables


def build_identity(cfg: JobConfig, seed_bundle: PromptBundle, split_sha256: str, split_sizes: dict[str, int],
                   scorer_id: str, tool_environment: dict[str, Any] | None = None) -> JobIdentity:
    c = cfg.cell
    cid = cell_id(method=cfg.method, task=c.task, topology=c.topology, framework=c.framework,
                  communication=c.communication, team_size=c.team_size, task_model=c.task_model,
                  reflection_model=cfg.reflection_model, optimizer_seed=cfg.seed, split_sha256=split_sha256,
                  budget=cfg.budget)
    cond = condition(task=c.task, topology=c.topology, framework=c.framework, communication=c.communication,
                     team_size=c.team_size, task_model=c.task_model, initial_bundle_sha256=seed_bundle.digest,
                     scorer_id=scorer_id, split_sha256=split_sha256, contract_version=JOB_CONTRACT_VERSION,
                     tool_environment=tool_environment)
    tables = claimed_tables(cfg)
    in_grid = on_grid(cfg.method, c, implemented())
    reasons = []  # off_grid_cell exactly when not in_grid (was: an identity job on a native cell had both)
    if not in_grid:
        reasons.append("off_grid_cell")
    elif c.framework == "native":  # the engine's own runtime stands in for no framework: it claims no table
        reasons.append("native_runtime")
    if tool_environment is not None and tool_environment.get("conformant") is False:
        reasons.append("tool_environment_not_conformant")
    if cfg.budget != FULL_BUDGET:
        reasons.append(f"budget_{cfg.budget}_not_{FULL_BUDGET}")
    if cfg.reflection_model != CANONICAL_REFLECTION_MODEL:
        reasons.append("reflection_model_not_canonical")
    if cfg.unsafe_sandbox:
        reasons.append("unsafe_sandbox")
    if cfg.simulated:
        reasons.append("simulated_endpoint")
    elif cfg.task_model_id != TASK_MODELS[c.task_model]:
        reasons.append("task_model_id_not_canonical")
    if cfg.smoke is not None:
        reasons.append(SMOKE_REASON)
    reasons.extend(method_options(cfg.method, cfg.method_options)[1])  # a non-default method option
    implementation = method_implementation_id(cfg.method)
    versioned: dict[str, Any] = {} if implementation is None else {"method_implementation_id": implementation}
    if cfg.smoke is not None:  # given only for a smoke run: an ordinary job.json is unchanged
        versioned["smoke"] = SmokeRun(rows_per_split=cfg.smoke)
    return JobIdentity(
        **versioned, schema="mas-promptbench-job/v1", protocol_id=PROTOCOL_ID, protocol_hash=PROTOCOL_HASH,
        cell=CellFields(**c.model_dump()), cell_id=cid, method=cfg.method, optimizer_seed=cfg.seed,
        budget=cfg.budget, source_tables=tables, in_grid=in_grid,
        protocol_conformant=not reasons,
        nonconformance_reasons=reasons, registry_key=registry_key(c),
        runtime_implementation_id=runtime_implementation_id(c.framework), scorer_id=scorer_id,
        seed_bundle=BundleJson(**seed_bundle.to_json()), condition=cond,
        condition_id=content_hash(cond), split_sha256=split_sha256, split_sizes=split_sizes,
        task_model_id=cfg.task_model_id, reflection_model=cfg.reflection_model,
        endpoint_kind="simulated" if cfg.simulated else "openai-compatible")


def check_out_dir(out: Path, job: JobIdentity) -> bool:
    """True when `out` already holds this job (resume). Raises when it holds anything else."""
    identity = job.to_json()
    job_path = out / "job.json"
    if not out.exists():
        return False
    if not job_path.exists():
        if not _killed_before_start(out):
            raise JobIdentityError(f"--out {out} is not empty and holds no job.json; use a fresh directory")
        return False
    existing = read_json(job_path)  # compared without what endpoints reported (engine/job/evidence.py)
    body = without_evidence(existing) if isinstance(existing, dict) else None
    identity = without_evidence(identity)
    if body != identity:
        smoke = _smoke_mismatch(body, identity)
        if smoke:
            raise JobIdentityError(f"--out {out} {smoke}; use a fresh --out")
        differing = ", ".join(_differing(body, identity)) or "format"
        raise JobIdentityError(f"--out {out} holds another job (differs in: {differing}); use a fresh --out")
    check_store_present(out / "card.sqlite")
    return True


def _smoke_mismatch(body: Any, identity: dict[str, Any]) -> str | None:
    """A smoke run and a full job (or smoke runs of other sizes) differ in many fields (split hash, cell id,
    budget, ...): the refusal names the one that matters."""
    theirs = body.get("smoke") if isinstance(body, dict) else None
    mine = identity.get("smoke")
    if theirs == mine:
        return None
    return f"holds {_run_kind(theirs)}, not {_run_kind(mine)} (differs in: smoke)"


def _run_kind(smoke: Any) -> str:
    return "a full job" if smoke is None else f"a smoke run (smoke.rows_per_split={smoke.get('rows_per_split')})"


def _differing(body: Any, identity: dict[str, Any]) -> list[str]:
    """The identity fields `body` (job.json on disk) differs in; inside the condition, the condition's own keys
    (`condition.member_seed_scheme`: a job written before replica seeds, section 2.2), so the one-line refusal
    names the change itself."""
    if not isinstance(body, dict):
        return sorted(identity)
    out = []
    for key in sorted(set(identity) | set(body)):
        mine, theirs = identity.get(key), body.get(key)
        if mine == theirs:
            continue
        if isinstance(mine, dict) and isinstance(theirs, dict):
            out += [f"{key}.{k}" for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
        else:
            out.append(key)
    return out


def _killed_before_start(out: Path) -> bool:
    """Whether `out` (holding no job.json) holds only what a job killed before writing its job.json leaves: its
    lock, a store being created, and a created store that records nothing (run_job writes job.json only once the
    store is whole, and records only after it). Anything else belongs to something else and is refused."""
    store = out / "card.sqlite"
    creating = creating_path(store).name  # and its -wal / -shm
    for p in out.iterdir():
        if p.name == ".job.lock" or p.name.startswith(creating):
            continue
        if p == store and p.is_file() and holds_no_records(p):
            continue
        return False
    return True


def check_store_present(path: Path) -> None:
    """A started job's store is there and not empty, else "store lost"; then engine/store/check.py.

    A job whose store is gone or empty cannot replay its recorded calls: re-creating it would silently re-send
    (and re-charge) every request and export an invalid card, so it is refused."""
    if not path.is_file():
        raise ArtifactError(f"store lost: {path} is missing but job.json exists; the job's records cannot be "
                            "replayed; restore the store or use a fresh --out")
    if path.stat().st_size == 0:
        raise ArtifactError(f"store lost: {path} is empty (0 bytes) but job.json exists; restore the store or use "
                            "a fresh --out")
    check_store_file(path, writable=True)


def write_identity(out: Path, identity: JobIdentity) -> Sealed[JobIdentity]:
    return write_artifact(out / "job.json", identity)
