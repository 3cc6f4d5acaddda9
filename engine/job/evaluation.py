"""Content-addressed, uncharged, greedy evaluations with paired per-item seeds.

The identity (condition, split, evaluation seed, bundle digest, ordered IDs, rows hash) names the evaluation;
evaluating the same bundle on the same split twice reuses the first one (no endpoint call). Interrupted
evaluations resume per item from the store's rollout index.

Bounded memory and disk: the sealed evaluation file references large values (final outputs) by `$blob` into the
job's store, where the response body already is, and the returned Evaluation holds records without their final
outputs (scores, statuses and usage are what selection and test read) unless `keep_outputs` is asked for.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from core.canonical import content_hash
from core.errors import ArtifactError
from core.models import PromptBundle, RolloutRecord, RolloutStatus, Row
from core.protocol import EVALUATION_DECODING, Decoding, evaluation_identity
from core.seeds import paired_evaluation_seed
from engine.job.artifacts import read_sealed, write_sealed
from engine.progress import Progress
from engine.runner import RolloutSpec, Runner


@dataclass(frozen=True)
class Evaluation:
    evaluation_id: str
    split: str
    bundle_sha256: str
    records: tuple[RolloutRecord, ...]
    reused: bool

    @property
    def example_ids(self) -> list[str]:
        return [r.example_id for r in self.records]

    @property
    def scores(self) -> list[float]:
        return [float(r.score) if r.score is not None else 0.0 for r in self.records]

    @property
    def mean(self) -> float | None:
        return sum(self.scores) / len(self.records) if self.records else None


def failure_counts(records: tuple[RolloutRecord, ...] | list[RolloutRecord]) -> dict[str, int]:
    return {
        "n": len(records),
        "usable": sum(1 for r in records if r.usable),
        "success": sum(1 for r in records if r.status == RolloutStatus.SUCCESS and not r.budget_exhausted),
        "semantic_failures": sum(1 for r in records if r.status == RolloutStatus.SEMANTIC_FAILURE
                                 and not r.budget_exhausted),
        "infrastructure_failures": sum(1 for r in records if r.status == RolloutStatus.INFRASTRUCTURE_FAILURE),
        "budget_exhausted": sum(1 for r in records if r.budget_exhausted),
        "skipped": 0,
    }


class SharedEvaluations(Protocol):
    """A content-addressed evaluation cache shared by jobs (engine/sweep/evalcache.py): `evaluate` runs
    `run(pool)` against a pool that answers every model call an earlier job recorded for this evaluation id (in
    any process) and sends only the others, so a request is answered once per evaluation while each job's store
    and card still hold every rollout and call. Returns the records and a provenance dict."""

    async def evaluate(self, evaluation_id: str, identity: dict[str, Any], pool: Any,
                       run: Callable[[Any], Awaitable[list[RolloutRecord]]]
                       ) -> tuple[list[RolloutRecord], dict[str, Any]]: ...


class Evaluator:
    def __init__(self, *, runner: Runner, job_dir: Path, condition: dict[str, Any], evaluation_seed: int,
                 shared: SharedEvaluations | None = None, progress: Progress | None = None):
        self.runner = runner
        self.shared = shared
        self.progress = progress  # done/total, failures, rate and ETA of each evaluation on stderr
        self.dir = job_dir / "evaluations"
        self.condition = condition
        self.condition_id = content_hash(condition)
        self.evaluation_seed = evaluation_seed

    def identity(self, bundle: PromptBundle, split: str, rows: list[Row]) -> dict[str, Any]:
        return evaluation_identity(cond=self.condition, split=split, evaluation_seed=self.evaluation_seed,
                                   bundle_sha256=bundle.digest, ordered_example_ids=[r.id for r in rows],
                                   rows_sha256=content_hash([r.public() for r in rows]))

    async def evaluate(self, bundle: PromptBundle, split: str, rows: list[Row],
                       keep_outputs: bool = False) -> Evaluation:
        ident = self.identity(bundle, split, rows)
        eid = ident["evaluation_id"]
        path = self.dir / f"{eid}.json"
        store = self.runner.store
        if path.exists():
            data = read_sealed(path)
            if data["identity"] != ident:
                raise ArtifactError(f"evaluation {eid} on disk has a different identity")
            records = tuple(_slim(RolloutRecord.model_validate(store.resolve(r) if keep_outputs else _no_output(r)),
                                  keep_outputs) for r in data["records"])
            return Evaluation(eid, split, bundle.digest, records, reused=True)
        specs = [
            RolloutSpec(row=row, bundle=bundle,
                        seed=paired_evaluation_seed(self.condition_id, self.evaluation_seed, split, row.id),
                        phase=split, rollout_key=f"eval:{eid}:{i}:{row.id}", evaluation_id=eid, position=i)
            for i, row in enumerate(rows)
        ]
        decoding = EVALUATION_DECODING
        if self.progress is not None:
            self.progress.begin(f"{split} evaluation", len(specs))
        try:
            records = await self._run(specs, decoding, eid, ident)
        finally:
            if self.progress is not None:
                self.progress.end()
        stored = await store.externalize([r.model_copy(update={"replayed": False}).model_dump(mode="json")
                                          for r in records])
        payload = {"schema": "mas-promptbench-evaluation/v1", "evaluation_id": eid, "identity": ident,
                   "failure_counts": failure_counts(records), "records": stored}
        write_sealed(path, payload)
        return Evaluation(eid, split, bundle.digest, tuple(_slim(r, keep_outputs) for r in records), reused=False)

    async def _run(self, specs: list[RolloutSpec], decoding: Decoding, eid: str,
                   ident: dict[str, Any]) -> tuple[RolloutRecord, ...]:
        store = self.runner.store
        if self.shared is None:
            records = tuple(await self.runner.run_batch(specs, decoding, ledger=None))
        else:
            async def run(pool: Any) -> list[RolloutRecord]:
                runner = copy.copy(self.runner)  # same store, limiter and recording; model calls via `pool`
                runner.pool = pool
                return await runner.run_batch(specs, decoding, ledger=None)

            shared, provenance = await self.shared.evaluate(eid, ident, self.runner.pool, run)
            records = tuple(shared)
            if provenance["source"] == "shared" and self.progress is not None:
                self.progress.served_from_cache(len(records))  # no endpoint work: not in a sweep's rate or plan
            await store.annotate("node", self.runner.run_node, "mpb.shared_evaluation",
                                 {"evaluation_id": eid, **provenance}, actor="engine:evaluation")
        return records


def _slim(record: RolloutRecord, keep_outputs: bool) -> RolloutRecord:
    return record if keep_outputs else record.without_outputs()


def _no_output(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "final_output": None}
