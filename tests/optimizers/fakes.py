"""In-memory doubles for unit tests of methods: a ledger-bound runner with a scripted score, a scripted
reflection model. They honour the OptimizerRunner contract (reserve, trim at the cap, budget-exhausted tail)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from core.ledger import BudgetLedger, LedgerSnapshot
from core.models import AgentOutput, PromptBundle, RolloutRecord, RolloutStatus, Row

ScoreFn = Callable[[Row, PromptBundle, "int | str"], float]
InfraFn = Callable[[Row, PromptBundle, "int | str"], bool]


class PoisonScore(float):
    """The score an infrastructure-failed record carries in these tests (protocol 5.3: it has none). Reading it
    as a number (truth value, float(), arithmetic, comparison) or rendering it as text fails the test at once."""

    def _read(self, *args: Any) -> Any:
        raise AssertionError("an infrastructure-failed record's score entered a score")

    __bool__ = __float__ = __int__ = __index__ = __round__ = __str__ = __format__ = _read  # type: ignore[assignment]
    __add__ = __radd__ = __sub__ = __rsub__ = _read  # type: ignore[assignment]
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _read  # type: ignore[assignment]
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __neg__ = __abs__ = _read  # type: ignore[assignment]
    __hash__ = float.__hash__

    def __repr__(self) -> str:
        return "PoisonScore()"


def infra_record(row: Row, bundle: PromptBundle, i: int) -> RolloutRecord:
    """An infrastructure failure after its retries whose score field holds a poison value (not validated)."""
    rec = RolloutRecord(rollout_id=f"f{i}", example_id=row.id, phase="optimize",
                        status=RolloutStatus.INFRASTRUCTURE_FAILURE, request_seed=0, bundle_sha256=bundle.digest,
                        attempts=3, error_kind="http_status", error="HTTP 503")
    return rec.model_copy(update={"score": PoisonScore(0.0), "feedback": "Correct."})


def rows(prefix: str, n: int) -> list[Row]:
    return [Row(id=f"{prefix}{i}", dataset="fake", task={"question": f"{prefix} question {i}"}) for i in range(n)]


class FakeRunner:
    def __init__(self, budget: int, score: ScoreFn, roles: Sequence[str] = ("solver",), infra: InfraFn | None = None):
        self.ledger = BudgetLedger(budget)
        self.score = score
        self.infra = infra  # rows that end as infrastructure failures (uncharged, poison score)
        self.infra_failures = 0
        self.roles = tuple(roles)
        self.calls: list[tuple[list[str], str, Any]] = []

    def budget(self) -> LedgerSnapshot:
        return self.ledger.snapshot()

    def validate_bundle(self, bundle: PromptBundle) -> None:
        assert set(bundle.roles) == set(self.roles)

    async def run_batch(self, batch: Sequence[Row], bundle: PromptBundle, iteration: int | str) -> list[RolloutRecord]:
        self.calls.append(([r.id for r in batch], bundle.digest, iteration))
        res = self.ledger.reserve(len(batch))
        out = []
        for i, row in enumerate(batch):
            if i >= res.granted:
                out.append(RolloutRecord(rollout_id=f"x{i}", example_id=row.id, phase="optimize",
                                         status=RolloutStatus.SEMANTIC_FAILURE, score=0.0, request_seed=0,
                                         bundle_sha256=bundle.digest, attempts=0, budget_exhausted=True,
                                         error="rollout budget exhausted; rollout not executed"))
                continue
            if self.infra is not None and self.infra(row, bundle, iteration):
                self.ledger.note_infrastructure_attempt(res, i)
                self.ledger.commit(res, i, RolloutStatus.INFRASTRUCTURE_FAILURE)
                self.infra_failures += 1
                out.append(infra_record(row, bundle, i))
                continue
            value = self.score(row, bundle, iteration)
            status = RolloutStatus.SUCCESS if value >= 1.0 else RolloutStatus.SEMANTIC_FAILURE
            charged = self.ledger.commit(res, i, status)
            out.append(RolloutRecord(rollout_id=f"r{i}", example_id=row.id, phase="optimize", status=status,
                                     score=value, feedback="Correct." if value >= 1 else "wrong (arithmetic error)",
                                     final_output=AgentOutput(text=f"Answer for {row.id}"), request_seed=0,
                                     bundle_sha256=bundle.digest, charged=charged))
        return out


class FakeReflection:
    """Appends a numbered sentence to the current instruction; counts calls per purpose."""

    def __init__(self) -> None:
        self.prompts: list[tuple[str, str, str]] = []

    async def propose(self, prompt: str, *, purpose: str, key: str) -> str:
        self.prompts.append((prompt, purpose, key))
        found = re.search(r"<current_instruction>\n(.*?)\n</current_instruction>", prompt, re.DOTALL)
        current = found.group(1) if found else ""
        return f"Thinking...\n```\nignored draft\n```\nFinal:\n```\n{current}\nTip {len(self.prompts)}.\n```"

    def usage(self) -> dict[str, Any]:
        return {"model_calls": len(self.prompts)}


def seed_bundle(roles: Sequence[str] = ("solver",)) -> PromptBundle:
    return PromptBundle(roles={r: f"You are the {r}." for r in roles}, metadata={"source": "test"})


def transcript_of(rollout_id: str, outputs: dict[str, str]):
    """A one-attempt transcript whose roles said `outputs` (one turn each), as SessionRunner.transcripts gives."""
    from core.transcript import Transcript, Turn

    return Transcript(rollout_id, tuple(Turn(role=r, member=0, turn=i, attempt=f"{rollout_id}#a1", messages=(),
                                             reply=text) for i, (r, text) in enumerate(outputs.items())))
