"""`--phase all|optimize|validate|test`: a job may stop after a phase and be continued later in the same --out.

Each phase needs the sealed artifact of the phase before it (validate: optimization.json; test: selection.json),
and each phase resumes from its own sealed artifact when it exists, so `--phase optimize`, then `--phase
validate`, then `--phase test` ends with the same artifacts as one `--phase all`.
"""

from __future__ import annotations

from typing import Any

from core.artifacts import JobIdentity, Optimization, Selection
from core.errors import UsageError
from engine.job.config import JobConfig

PHASE_INPUTS = {"validate": "optimization.json", "test": "selection.json"}


def check_phase_inputs(cfg: JobConfig) -> None:
    """`--phase validate` needs a sealed optimization.json and `--phase test` a sealed selection.json in --out;
    refused (one line, exit 2) before anything is written."""
    needed = PHASE_INPUTS.get(cfg.phase)
    if needed is not None and not (cfg.out / needed).is_file():
        earlier = "optimize" if cfg.phase == "validate" else "validate"
        raise UsageError(f"--phase {cfg.phase} needs {needed} in {cfg.out}; run --phase {earlier} (or all) first")


def phase_summary(identity: JobIdentity, phase: str, *, optimization: Optimization,
                  selection: Selection | None = None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "status": "phase_completed", "phase": phase, "cell_id": identity.cell_id,
        "protocol_conformant": identity.protocol_conformant, "endpoint_kind": identity.endpoint_kind,
        "stop_reason": optimization.stop_reason, "charged": optimization.budget.charged}
    if selection is not None:
        fields = selection.to_json()
        summary.update({k: fields[k] for k in ("selection_id", "selected_candidate", "fallback_reason",
                                               "baseline_validation_score", "incumbent_validation_score",
                                               "validation_delta")})
    return summary
