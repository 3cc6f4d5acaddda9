"""The viewer's run banner and prompt diff.

Banner: whether the run was simulated or non-conformant (manifest run.protocol_conformant,
nonconformance_reasons, endpoint_kind) and the model ids the endpoints reported (the derivation's
job.endpoint_reports, else the mpb.job annotation): the cell's `task_model` is a label of the grid, the reported
model id is what answered. Diff: per role, a line diff of the seed and the deployed prompt (difflib, at build
time), as rows of (tag, seed line, deployed line)."""

from __future__ import annotations

import difflib
from typing import Any

from engine.cards.view_calls import as_dict


def _job(manifest: dict[str, Any], annotations: list[dict[str, Any]]) -> dict[str, Any]:
    run = as_dict(manifest.get("run"))
    job = (run.get("derivation") or {}).get("job") if isinstance(run.get("derivation"), dict) else None
    if isinstance(job, dict) and job:
        return job
    found = [a["payload"] for a in annotations if a["namespace"] == "mpb.job" and isinstance(a["payload"], dict)]
    return found[-1] if found else {}


def banner(manifest: dict[str, Any], annotations: list[dict[str, Any]]) -> dict[str, Any]:
    run = as_dict(manifest.get("run"))
    job = _job(manifest, annotations)
    reports = [r for r in job.get("endpoint_reports") or [] if isinstance(r, dict)]
    reasons = [str(x) for x in (run.get("nonconformance_reasons") or job.get("nonconformance_reasons") or [])]
    conformant = run.get("protocol_conformant", job.get("protocol_conformant"))
    kind = run.get("endpoint_kind") or job.get("endpoint_kind")
    simulated = (any(r.get("simulated") for r in reports) or "simulated" in str(kind or "")
                 or any("simulated" in x for x in reasons))
    task = [r for r in reports if "task" in str(r.get("role", ""))]
    used = sorted({str(r.get("reported_model") or r.get("model_id")) for r in task})
    cell = as_dict(run.get("cell"))
    return {"show": simulated or conformant is not True, "simulated": simulated, "conformant": conformant,
            "reasons": reasons, "endpoint_kind": kind,
            "reports": [{k: r.get(k) for k in ("role", "index", "model_id", "reported_model", "simulated")}
                        for r in reports],
            "task_models": used or ([str(run["task_model_id"])] if run.get("task_model_id") else []),
            "requested_model": run.get("task_model_id") or job.get("task_model_id"),
            "cell_task_model": cell.get("task_model")}


def _lines(text: Any) -> list[str]:
    return (text if isinstance(text, str) else "" if text is None else str(text)).split("\n")


def line_diff(a: Any, b: Any) -> list[list[Any]]:
    """Rows [tag, seed line or None, deployed line or None]; tag is equal, delete, insert or replace."""
    left, right = _lines(a), _lines(b)
    rows: list[list[Any]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, left, right, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [["equal", line, line] for line in left[i1:i2]]
            continue
        old, new = left[i1:i2], right[j1:j2]
        for k in range(max(len(old), len(new))):
            rows.append([tag, old[k] if k < len(old) else None, new[k] if k < len(new) else None])
    return rows


def prompt_diff(bundles: list[dict[str, Any]]) -> dict[str, Any] | None:
    seed = next((b for b in bundles if "seed" in (b.get("used_as") or [])), None)
    deployed = next((b for b in bundles if "deployed" in (b.get("used_as") or [])), None)
    if seed is None or deployed is None:
        return None
    a, b = seed.get("roles") or {}, deployed.get("roles") or {}
    roles = list(a) + [r for r in b if r not in a]
    return {"seed": seed.get("bundle_sha256"), "deployed": deployed.get("bundle_sha256"),
            "same": seed.get("bundle_sha256") == deployed.get("bundle_sha256"),
            "demos": [len(seed.get("demos") or []), len(deployed.get("demos") or [])],
            "roles": [{"role": r, "changed": a.get(r) != b.get(r), "rows": line_diff(a.get(r), b.get(r))}
                      for r in roles]}
