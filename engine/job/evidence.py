"""Conformance from evidence: a job is protocol-conformant only when nothing recorded contradicts it.

The configuration gives the first reasons (engine/job/identity.py: budget, cell, models, the built-in simulated
endpoint, ...). Then every endpoint the job uses says what it is in its answer to the start-up check
(engine/chat/preflight.py, core.artifacts.EndpointReport): the simulated endpoint says so on every response
(header `X-Simulated-Endpoint: true`, body `"simulated": true`), whatever model id it was started with. A job whose
task endpoint reported itself simulated without being configured so (`serve-sim` started separately and passed as
`--task-endpoint ... --model-id Qwen/Qwen3.5-9B`) gets `task_endpoint_reported_simulated`, and likewise for the
reflection endpoint; job.json records the reports (`endpoint_reports`) and the card's `mpb.job` annotation too, and
`aggregate` skips the job unless `--include-nonconformant`.

Resume: job.json is never rewritten. Its identity is compared without the evidence (what endpoints said may only
be known once they are checked, and a resumed job may check fewer of them: a sealed optimization needs no
reflection endpoint), so job.json files written before endpoints reported themselves stay resumable and every
identity hash is unchanged. Conformance can be lost, never regained: a job recorded conformant whose endpoints now
report themselves simulated is refused in one line (its calls would mix both); a job recorded non-conformant stays
so.
"""

from __future__ import annotations

from typing import Any

from core.artifacts import EndpointReport, JobIdentity
from core.errors import JobIdentityError
from engine.chat.endpoint import EndpointPool

REPORTED_SIMULATED = {"task endpoint": "task_endpoint_reported_simulated",
                      "reflection endpoint": "reflection_endpoint_reported_simulated"}
EVIDENCE_REASONS = frozenset(REPORTED_SIMULATED.values())


def reports_of(*pools: EndpointPool | None) -> list[EndpointReport]:
    return [e.report for pool in pools if pool is not None for e in pool.endpoints if e.report is not None]


def with_evidence(identity: JobIdentity, reports: list[EndpointReport], *, simulated_task: bool,
                  simulated_reflection: bool) -> JobIdentity:
    """`identity` with the endpoints' reports and the reasons they add (none for a role the configuration
    already marks simulated)."""
    configured = {"task endpoint": simulated_task, "reflection endpoint": simulated_reflection}
    reasons = [r for r in identity.nonconformance_reasons if r not in EVIDENCE_REASONS]
    for role, reason in REPORTED_SIMULATED.items():
        if not configured[role] and any(r.simulated for r in reports if r.role == role):
            reasons.append(reason)
    return identity.model_copy(update={"endpoint_reports": list(reports), "nonconformance_reasons": reasons,
                                       "protocol_conformant": not reasons})


def without_evidence(identity: dict[str, Any]) -> dict[str, Any]:
    """job.json's content as the configuration alone determines it (what a resume compares)."""
    body = {k: v for k, v in identity.items() if k not in ("endpoint_reports", "sha256")}
    if isinstance(body.get("nonconformance_reasons"), list):
        reasons = [r for r in body["nonconformance_reasons"] if r not in EVIDENCE_REASONS]
        body.update(nonconformance_reasons=reasons, protocol_conformant=not reasons)
    return body


def check_resumed_evidence(recorded: JobIdentity, now: JobIdentity) -> None:
    """A resumed job keeps its job.json; refused when it was recorded conformant and its endpoints now say
    otherwise."""
    added = sorted(set(now.nonconformance_reasons) - set(recorded.nonconformance_reasons))
    if recorded.protocol_conformant and added:
        raise JobIdentityError(f"this job was recorded protocol-conformant, but its endpoints now contradict it "
                               f"({', '.join(added)}); resume it against the endpoints it started with, or use a "
                               "fresh --out")
