"""`card verify CARD --rescore`: the benchmark's protocol scorer run again on every recorded final output.

The card records, per rollout, its final output (`mpb.rollout.final_output`: the answering agent's text and tool
calls, with the metadata the scorer reads, e.g. recorded tool results) and the score it was given (`mpb.score`).
Re-scoring loads each rollout's row from the dataset (`--data-dir` and the dataset's options, as for the job),
scores the recorded output under this engine's scorer and reports every rollout whose value (or malformed flag)
differs, and every score annotated without a scorable output. Nothing is written; exit 1 when any differs.
A rollout without a usable final output (an infrastructure failure, a budget-exhausted row) has nothing to score.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.errors import ArtifactError
from core.models import AgentOutput
from engine.cards.bundle import Bundle
from engine.cards.reader import CardReader

USABLE = ("success", "semantic_failure")


@dataclass(frozen=True)
class Difference:
    node: str
    example_id: str
    phase: str
    recorded: dict[str, Any]
    rescored: dict[str, Any] | None  # None: no scorable output behind the recorded score

    def line(self) -> str:
        now = "no scorable final output" if self.rescored is None else \
            f"rescored value={self.rescored['value']} malformed={self.rescored['malformed']}"
        return (f"DIFFERS {self.node} ({self.phase}, {self.example_id}): recorded value={self.recorded.get('value')}"
                f" malformed={self.recorded.get('malformed')}; {now}")


@dataclass
class Report:
    task: str
    scorer_id: str
    recorded_scorers: set[str] = field(default_factory=set)
    checked: int = 0
    skipped: int = 0  # rollouts with no usable output and no score (infrastructure failures, budget exhausted)
    differences: list[Difference] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [d.line() for d in self.differences]
        other = sorted(self.recorded_scorers - {self.scorer_id})
        if other:
            out.append(f"note: scores recorded by {', '.join(other)}; re-scored by {self.scorer_id}")
        out.append(f"task={self.task}: {self.checked} score(s) re-scored, {len(self.differences)} differ, "
                   f"{self.skipped} rollout(s) without a scorable output")
        return out


def card_task(bundle: Bundle) -> str:
    try:
        task = json.loads(bundle.files["manifest.json"])["run"]["cell"]["task"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError("the card's manifest names no run.cell.task: not a job card") from exc
    return str(task)


def rescore(bundle: Bundle, bench: Benchmark, data_dir: str | None) -> Report:
    reader = CardReader(bundle)
    claims = {node: row.raw.get("payload") or {} for node, row in reader.latest_annotations("mpb.rollout").items()}
    scores = {node: row.raw.get("payload") or {} for node, row in reader.latest_annotations("mpb.score").items()}
    report = Report(task=bench.name, scorer_id=bench.scorer_id)
    todo: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for node, claim in claims.items():
        score = scores.get(node)
        output = claim.get("final_output")
        if score is not None and isinstance(score.get("scorer"), str):
            report.recorded_scorers.add(score["scorer"])
        if claim.get("status") in USABLE and isinstance(output, dict) and not claim.get("budget_exhausted"):
            todo.append((node, claim, score or {}))
        elif score is not None and not claim.get("budget_exhausted"):
            report.differences.append(Difference(node, str(claim.get("example_id")), str(claim.get("phase")),
                                                 _verdict(score), None))
        else:
            report.skipped += 1
    ids = sorted({str(claim.get("example_id")) for _, claim, _ in todo})
    rows = {row.id: row for row in bench.load_rows(ids, data_dir)} if ids else {}

    async def score_all() -> list[dict[str, Any]]:
        out = []
        for _, claim, _ in todo:
            output = AgentOutput.model_validate(claim["final_output"])
            verdict = await bench.score_async(rows[str(claim["example_id"])], output)
            out.append({"value": float(verdict.value), "malformed": bool(verdict.malformed)})
        return out

    for (node, claim, score), now in zip(todo, anyio.run(score_all)):
        report.checked += 1
        recorded = _verdict(score)
        if recorded != now:
            report.differences.append(Difference(node, str(claim.get("example_id")), str(claim.get("phase")),
                                                 recorded, now))
    return report


def _verdict(score: dict[str, Any]) -> dict[str, Any]:
    value = score.get("value")
    return {"value": float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value,
            "malformed": bool(score.get("malformed", False))}
