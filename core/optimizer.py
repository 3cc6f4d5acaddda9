"""The Optimizer protocol (protocol-v1 section 7) and what the engine hands a method.

A method sees only train and validation rows, the frozen seed bundle, and a runner whose every rollout goes
through the ledger. It never sees test rows or the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from core.coalition import CoalitionGame, MemberMask
from core.ledger import LedgerSnapshot
from core.models import PromptBundle, RolloutRecord, Row
from core.transcript import Transcript


class OptimizerRunner(Protocol):
    roles: tuple[str, ...]

    async def run_batch(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str, *,
                        control: MemberMask | None = None) -> list[RolloutRecord]:
        """Charged rollouts (reserved before dispatch, trimmed at the cap; rows past it come back
        budget-exhausted and uncharged), in input order. `control`: a coalition mask (core/coalition.py) the
        runtime must honour and acknowledge, else the job fails; optimize phase only."""
        ...

    def budget(self) -> LedgerSnapshot: ...

    def validate_bundle(self, bundle: PromptBundle) -> None: ...


@dataclass(frozen=True)
class CurvePoint:
    charged_rollouts: int
    native_iteration: int
    native_observed_score: float | None
    bundle_hash: str
    reason: str


@dataclass(frozen=True)
class OptimizerResult:
    incumbent: PromptBundle
    stop_reason: str
    curve: tuple[CurvePoint, ...] = ()
    artifacts: dict[str, Any] = field(default_factory=dict)
    reflection_usage: dict[str, Any] = field(default_factory=dict)


class ReflectionModel(Protocol):
    """The reflection / proposal model a method talks to (protocol-v1 section 7: one client for all reflection
    traffic). The engine's implementation sends the call with thinking on, a 48,000-token ceiling, the
    method-native sampling and a logical seed derived from (`purpose`, `key`, sha256 of `prompt`), records it in
    the store before returning, and replays a recorded call on resume instead of sending it again.

    `purpose` names the kind of call (e.g. "gepa.mutation"); `key` is its logical position in the method's search
    (e.g. "iteration=7|role=solver"); both must be pure functions of the method's deterministic state.
    Raises core.errors.InfrastructureError when the endpoint keeps failing.
    """

    async def propose(self, prompt: str, *, purpose: str, key: str) -> str: ...

    def usage(self) -> dict[str, Any]:
        """Calls and tokens so far, per purpose (identical for a live run and a replayed one)."""
        ...


class Optimizer(Protocol):
    name: str
    smallest_useful_budget: int

    def plan(self, budget: int, n_train: int, n_validation: int) -> str:
        """A one-paragraph pre-flight plan: what the budget buys for this method and these split sizes."""
        ...

    async def optimize(self, runner: OptimizerRunner, train: Sequence[Row], validation: Sequence[Row],
                       seed_bundle: PromptBundle, budget: int) -> OptimizerResult: ...


@runtime_checkable
class SizedBudget(Protocol):
    """An optimizer whose smallest useful budget (protocol 8.9) depends on the split sizes (GEPA: the validation
    split + one proposal; MAPRO: two train passes; MASPO: two minibatches); others have `smallest_useful_budget`."""

    def smallest_budget(self, n_train: int, n_validation: int) -> int: ...


class ModelClient(Protocol):
    """A recorded, replayable, uncharged model client (protocol-v1 section 7), as ReflectionModel but with a full
    message list and per-call sampling overrides. The engine wires one per component: `reflection` (the
    reflection model), `judge` and `probe` (the TASK model, thinking off; used by MAPRO and MASPO). Calls never
    touch the ledger; they are counted per purpose in `usage()` and appear in optimization.json usage."""

    async def complete(self, messages: list[dict[str, str]], *, purpose: str, key: str,
                       temperature: float | None = None, max_tokens: int | None = None) -> str: ...

    def usage(self) -> dict[str, Any]: ...


class SessionRunner(OptimizerRunner, Protocol):
    """The RunnerSession view (protocol-v1 section 7) MAPRO and MASPO need on top of OptimizerRunner:
    paired rollouts and the transcripts of recorded rollouts (MAPRO, MASPO, TAVO); `game`: the coalition game of
    the team when its runtime honours member masks (HiveMind), else None."""

    game: CoalitionGame | None

    async def run_paired(self, rows: Sequence[Row], bundle: PromptBundle, iteration: int | str,
                         pair_key: str, *, control: MemberMask | None = None) -> list[RolloutRecord]:
        """As run_batch, but the request seed of row i depends on (`iteration`, row, `pair_key`, i) and not on the
        bundle, so two bundles run under the same `pair_key` see the same item AND seed (a paired comparison)."""
        ...

    async def transcripts(self, records: Sequence[RolloutRecord]) -> list[Transcript]:
        """Every recorded turn of each rollout (role, member, turn, messages, reply, tool replies; core.transcript),
        in input order; read off the event loop."""
        ...
