"""`--phase all|optimize|validate|test`: a job may stop after a phase and be continued later in the same --out.

Each phase needs the sealed artifact of the phase before it (validate: optimization.json; test: selection.json),
and each phase resumes from its own sealed artifact when it exists, so `--phase optimize`, then `--phase
validate`, then `--phase test` ends with the same artifacts as one `--phase all`.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class PhaseCompleted:
    """What a job run with `--phase optimize|validate` returns (a full run returns core.artifacts.JobResult): the
    phase it stopped after, its search's end and, after validate, the selection's outcome."""

    phase: str
    cell_id: str
    protocol_conformant: bool
    endpoint_kind: str
    stop_reason: str
    charged: int
    selection: dict[str, Any] | None = None  # selection.json's outcome fields, after `--phase validate`

    status = "phase_completed"

    def to_json(self) -> dict[str, Any]:
        """The summary line's fields (`python -m engine job` prints them)."""
        return {"status": self.status, "phase": self.phase, "cell_id": self.cell_id,
                "protocol_conformant": self.protocol_conformant, "endpoint_kind": self.endpoint_kind,
                "stop_reason": self.stop_reason, "charged": self.charged, **(self.selection or {})}


SELECTION_OUTCOME = ("selection_id", "selected_candidate", "fallback_reason", "baseline_validation_score",
                     "incumbent_validation_score", "validation_delta")


def phase_summary(identity: JobIdentity, phase: str, *, optimization: Optimization,
                  selection: Selection | None = None) -> PhaseCompleted:
    fields = None if selection is None else {k: selection.to_json()[k] for k in SELECTION_OUTCOME}
    return PhaseCompleted(phase=phase, cell_id=identity.cell_id, protocol_conformant=identity.protocol_conformant,
                          endpoint_kind=identity.endpoint_kind, stop_reason=optimization.stop_reason,
                          charged=optimization.budget.charged, selection=fields)
