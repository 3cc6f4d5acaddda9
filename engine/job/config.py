"""Job configuration: validated before anything is written."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.cell import parse_cell
from core.errors import UsageError
from core.methods import check_member_masks
from core.methods import method_options as check_method_options
from core.models import Cell
from core.protocol import CANONICAL_REFLECTION_MODEL, FULL_BUDGET, TASK_MODELS
from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID, SIMULATED_TASK_MODEL_ID
from engine.chat.auth import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_REFLECTION_API_KEY_ENV,
    api_key_from_env,
    check_endpoint_url,
    check_env_name,
)
from engine.chat.preflight import DEFAULT_STARTUP_TIMEOUT_S
from engine.args import check_out_directory
from engine.chat.endpoint import DEFAULT_MAX_OUTAGE_S, Timeouts
from engine.runner import RetryPolicy
from topologies.registry import TOPOLOGIES

SIMULATED_MODEL_ID = SIMULATED_TASK_MODEL_ID  # the one default (core.vocabulary); the sim serves it too
MAX_CALLS_PER_ATTEMPT = 64
DEFAULT_REFLECTION_URL = "http://localhost:8200/v1"  # protocol 5.4: REFLECTION_MODEL_BASE_URL default
PHASES = ("all", "optimize", "validate", "test")


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
    api_key_env: str = DEFAULT_API_KEY_ENV  # the variable's NAME only: a key is never stored in a config
    reflection_api_key_env: str = DEFAULT_REFLECTION_API_KEY_ENV
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S
    unsafe_sandbox: bool = False  # run model-written code without a jail if none can be built
    phase: str = "all"  # all | optimize | validate | test: run phases up to and including this one
    allow_any_cell: bool = False  # off-grid cells run only with it, and are marked non-conformant
    dataset_options: dict[str, Any] = field(default_factory=dict)  # e.g. HotpotQA retrieval (wiki_dir, ...)
    method_options: dict[str, str] = field(default_factory=dict)  # --method-option NAME=VALUE (core/methods.py)
    max_outage: float = DEFAULT_MAX_OUTAGE_S
    # smoke run (`--smoke N`): every phase on the first N rows of each split, non-conformant (engine/job/smoke.py)
    smoke: int | None = None
    budget_given: bool = True  # False: --budget was not given (a smoke run then takes its method's smoke budget)

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


def check_endpoints_option(endpoints: tuple[str, ...], what: str = "--task-endpoint") -> tuple[str, ...]:
    for url in endpoints:
        check_endpoint_url(url, what)
    return endpoints


def check_cell_text(cell: str) -> str:
    """The --cell text is ASCII and its team_size (if any) is written with ASCII digits (`int("٤")` is 4)."""
    if not cell.isascii() or not cell.isprintable():
        raise UsageError(f"--cell must be printable ASCII, got {cell!r}")
    found = re.search(r"(?:^|,)\s*team_size\s*=\s*([^,]*)", cell)
    if found and not re.fullmatch(r"[0-9]+", found.group(1).strip()):
        raise UsageError(f"team_size must be written with ASCII digits, got {found.group(1).strip()!r}")
    return cell


def check_timeout(value: float, what: str) -> float:
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{what} must be a finite number of seconds > 0, got {value}")
    return float(value)


def check_key_options(api_key_env: str, reflection_api_key_env: str, *, explicit: bool,
                      explicit_reflection: bool) -> None:
    """Variable names are valid; a variable named explicitly must be set; a set key must be sendable."""
    check_env_name(api_key_env, "--api-key-env")
    check_env_name(reflection_api_key_env, "--reflection-api-key-env")
    api_key_from_env(api_key_env, required=explicit, what="--api-key-env")
    api_key_from_env(reflection_api_key_env, required=explicit_reflection, what="--reflection-api-key-env")


def build_config(*, cell: str, method: str, seed: int, out: str, budget: int | None, task_endpoints: list[str] | None,
                 model_id: str | None, data_dir: str | None, concurrency: int, reflection_endpoint: str | None = None,
                 reflection_model: str | None = None, allow_small_budget: bool = False, quiet: bool = False,
                 request_timeout: float = 1200.0, api_key_env: str | None = None,
                 reflection_api_key_env: str | None = None,
                 startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S, unsafe_sandbox: bool = False,
                 phase: str = "all", allow_any_cell: bool = False,
                 dataset_options: dict[str, Any] | None = None,
                 max_outage: float = DEFAULT_MAX_OUTAGE_S, smoke: int | None = None,
                 method_options: dict[str, str] | None = None) -> JobConfig:
    """`budget` None: not given (FULL_BUDGET, or with `smoke` the method's smoke budget, set by engine.job.smoke)."""
    parsed = parse_cell(check_cell_text(cell))
    if seed not in (0, 1, 2):
        raise UsageError(f"--seed must be 0, 1 or 2, got {seed}")
    if smoke is not None and smoke < 1:
        raise UsageError(f"--smoke must be >= 1 (rows per split), got {smoke}")
    budget_given = budget is not None
    budget = FULL_BUDGET if budget is None else budget
    if not 1 <= budget <= FULL_BUDGET:
        raise UsageError(f"--budget must be in 1..{FULL_BUDGET}, got {budget}")
    check_method_options(method, dict(method_options or {}))  # one line for an unknown option or value
    check_member_masks(method, parsed.framework, parsed.topology,
                       bool(getattr(TOPOLOGIES.get(parsed.topology), "member_masks", False)))
    if phase not in PHASES:
        raise UsageError(f"--phase must be one of {', '.join(PHASES)}, got {phase!r}")
    if concurrency < 1:
        raise UsageError(f"--concurrency must be >= 1, got {concurrency}")
    check_timeout(request_timeout, "--request-timeout")
    check_timeout(startup_timeout, "--startup-timeout")
    if not (math.isfinite(max_outage) and max_outage >= 0):
        raise UsageError(f"--max-outage must be a finite number of seconds >= 0, got {max_outage}")
    endpoints = check_endpoints_option(endpoints_from(task_endpoints))
    if endpoints and not model_id and not os.environ.get("MODEL_ID"):
        raise UsageError("--model-id (or MODEL_ID) is required with a real --task-endpoint")
    reflection_endpoint = reflection_endpoint or os.environ.get("REFLECTION_MODEL_BASE_URL") or None
    if reflection_endpoint is not None:
        check_endpoint_url(reflection_endpoint, "--reflection-endpoint")
    check_key_options(api_key_env or DEFAULT_API_KEY_ENV, reflection_api_key_env or DEFAULT_REFLECTION_API_KEY_ENV,
                      explicit=api_key_env is not None, explicit_reflection=reflection_api_key_env is not None)
    check_out_directory(Path(out))
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
        api_key_env=api_key_env or DEFAULT_API_KEY_ENV,
        reflection_api_key_env=reflection_api_key_env or DEFAULT_REFLECTION_API_KEY_ENV,
        startup_timeout=startup_timeout,
        unsafe_sandbox=unsafe_sandbox, phase=phase, allow_any_cell=allow_any_cell,
        dataset_options=dict(dataset_options or {}), smoke=smoke, budget_given=budget_given,
        method_options=dict(method_options or {}),
    )
