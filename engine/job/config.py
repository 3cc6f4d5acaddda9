"""Job configuration: validated before anything is written."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from core.cell import parse_cell
from core.errors import UsageError
from core.models import Cell
from core.protocol import CANONICAL_REFLECTION_MODEL, FULL_BUDGET, TASK_MODELS
from engine.chat.endpoint import DEFAULT_MAX_OUTAGE_S, Timeouts
from engine.runner import RetryPolicy

SIMULATED_MODEL_ID = "simulated-policy"
SIMULATED_REFLECTION_MODEL_ID = "simulated-reflection"
MAX_CALLS_PER_ATTEMPT = 64
DEFAULT_REFLECTION_URL = "http://localhost:8200/v1"  # protocol 5.4: REFLECTION_MODEL_BASE_URL default


@dataclass(frozen=True)
class JobConfig:
    cell: Cell
    method: str
    seed: int
    out: Path
    budget: int = FULL_BUDGET
    task_endpoints: tuple[str, ...] = ()
    model_id: str | None = None
    reflection_endpoint: str | None = None
    reflection_model: str = CANONICAL_REFLECTION_MODEL
    data_dir: str | None = None
    concurrency: int = 64
    request_timeout: float = 1200.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_small_budget: bool = False
    quiet: bool = False
    sim_delay_s: float = 0.0
    max_outage: float = DEFAULT_MAX_OUTAGE_S

    @property
    def attempt_timeout(self) -> float:
        """Deadline of one rollout attempt: the longest pool outage it may wait through plus generous room for
        the calls of a multi-agent rollout (MAX_CALLS_PER_ATTEMPT request deadlines)."""
        return self.max_outage + MAX_CALLS_PER_ATTEMPT * Timeouts(read=self.request_timeout).deadline

    @property
    def simulated(self) -> bool:
        return not self.task_endpoints

    @property
    def task_model_id(self) -> str:
        if self.model_id:
            return self.model_id
        return SIMULATED_MODEL_ID if self.simulated else TASK_MODELS[self.cell.task_model]


def endpoints_from(args_endpoints: list[str] | None) -> tuple[str, ...]:
    if args_endpoints:
        return tuple(args_endpoints)
    env = os.environ.get("TASK_ENDPOINTS") or os.environ.get("VLLM_BASE_URL") or ""
    return tuple(e.strip() for e in env.split(",") if e.strip())


def build_config(*, cell: str, method: str, seed: int, out: str, budget: int, task_endpoints: list[str] | None,
                 model_id: str | None, data_dir: str | None, concurrency: int, reflection_endpoint: str | None = None,
                 reflection_model: str | None = None, allow_small_budget: bool = False, quiet: bool = False,
                 request_timeout: float = 1200.0, max_outage: float = DEFAULT_MAX_OUTAGE_S) -> JobConfig:
    parsed = parse_cell(cell)
    if seed not in (0, 1, 2):
        raise UsageError(f"--seed must be 0, 1 or 2, got {seed}")
    if not 1 <= budget <= FULL_BUDGET:
        raise UsageError(f"--budget must be in 1..{FULL_BUDGET}, got {budget}")
    if concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {concurrency}")
    if not (math.isfinite(max_outage) and max_outage >= 0):
        raise UsageError(f"--max-outage must be a finite number of seconds >= 0, got {max_outage}")
    endpoints = endpoints_from(task_endpoints)
    for url in endpoints:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--task-endpoint must be an http(s) URL, got {url!r}")
    if endpoints and not model_id and not os.environ.get("MODEL_ID"):
        raise UsageError("--model-id (or MODEL_ID) is required with a real --task-endpoint")
    reflection_endpoint = reflection_endpoint or os.environ.get("REFLECTION_MODEL_BASE_URL") or None
    reflection_model = reflection_model or os.environ.get("REFLECTION_MODEL_ID") or None
    if reflection_model is None:
        # simulated task endpoint and no reflection endpoint: the simulated endpoint also plays the reflection model
        reflection_model = CANONICAL_REFLECTION_MODEL if endpoints or reflection_endpoint \
            else SIMULATED_REFLECTION_MODEL_ID
    return JobConfig(
        cell=parsed, method=method, seed=seed, out=Path(out), budget=budget, task_endpoints=endpoints,
        model_id=model_id or os.environ.get("MODEL_ID") or None, data_dir=data_dir, concurrency=concurrency,
        reflection_endpoint=reflection_endpoint, reflection_model=reflection_model,
        allow_small_budget=allow_small_budget, quiet=quiet, request_timeout=request_timeout, max_outage=max_outage,
    )
