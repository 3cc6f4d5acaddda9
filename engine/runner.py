"""Rollouts under the ledger: concurrent in an anyio task group, records returned in input order.

One rollout = one full multi-agent execution of one row, scored 0/1. Infrastructure failures (transport, HTTP,
malformed responses, zero observed model calls, scorer exceptions) are retried at most twice with the SAME
request seed, never charged; after the third failed attempt the record is `infrastructure_failure`.
A rollout already recorded in the store under the same logical key is replayed (no request, same ledger outcome),
except one that an EARLIER process recorded as an infrastructure failure: re-running a job attempts it again with
its same seed (recovery after an outage; the failed attempts stay in the store).

Whatever a topology raises inside an attempt goes through engine.containment (the one place exception groups are
converted); this runner is the only catcher. Each attempt runs under a `fail_after` deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from core.benchmark import Benchmark
from core.coalition import CONTROL_KEY
from core.errors import ContractError, EndpointTimeout, InfrastructureError, ScorerError
from core.ledger import BudgetLedger, Reservation
from core.models import RolloutRecord, RolloutStatus, Row, Usage
from core.protocol import MAX_INFRA_RETRIES, Decoding
from core.seeds import member_seed_scheme
from core.topology import Topology
from core.vocabulary import Actor, MutationType, NodeFailureKind, NodeStatus, Phase
from engine.agent_context import RecordedAgentContext
from engine.chat.auth import recorded_secrets
from engine.chat.endpoint import EndpointPool
from engine.containment import attempt_failure
from engine.gateway.server import Gateway
from engine.retry import RetryPolicy, retrying
from engine.rollout import Outcome, RolloutSpec, build_record, finish_op, rollout_key
from engine.store import Committed, Store

BUDGET_EXHAUSTED_ERROR = "rollout budget exhausted; rollout not executed"
__all__ = ["BUDGET_EXHAUSTED_ERROR", "CallTally", "RetryPolicy", "RolloutSpec", "Runner", "rollout_key"]


class _Slot:
    def __init__(self, ledger: BudgetLedger | None, res: Reservation | None, index: int):
        self.ledger, self.res, self.index = ledger, res, index

    def infra_attempt(self) -> None:
        if self.ledger is not None and self.res is not None:
            self.ledger.note_infrastructure_attempt(self.res, self.index)

    def commit(self, status: RolloutStatus) -> bool:
        if self.ledger is None or self.res is None:
            return False
        return self.ledger.commit(self.res, self.index, status)


@dataclass
class CallTally:
    """Model calls of rollout attempts answered from the store (shared by a runner's shallow copies)."""

    replayed: int = 0


class Runner:
    def __init__(self, *, store: Store, pool: EndpointPool, bench: Benchmark, topology: Topology,
                 run_node: str, retry: RetryPolicy = RetryPolicy(), concurrency: int | None = None,
                 record_calls: bool = True, on_record: Callable[[RolloutRecord], None] | None = None,
                 attempt_timeout: float | None = None, gateway: Gateway | None = None):
        self.store, self.pool, self.bench, self.topology, self.gateway = store, pool, bench, topology, gateway
        self.attempt_timeout = attempt_timeout  # None: no deadline beyond each request's own
        self._executed: set[str] = set()  # rollout keys executed by this process (never re-attempted twice)
        self.run_node = run_node
        self.retry = retry
        self.limiter = anyio.CapacityLimiter(concurrency or pool.capacity)
        self.record_calls = record_calls
        self.on_record = on_record
        self._tool_call = bench.call_tool if bench.executes_tools else None
        self._score_async = bench.score_async
        # scrubbed from tool results, scorer feedback and errors (read once, not per rollout)
        self._secrets = recorded_secrets()
        self.calls = CallTally()  # the resume line's "M model calls replayed" (rollouts re-run in part)

    # ------------------------------------------------------------------ batches
    async def run_batch(self, specs: Sequence[RolloutSpec], decoding: Decoding,
                        ledger: BudgetLedger | None = None) -> list[RolloutRecord]:
        """Run specs concurrently; records come back in input order. With a ledger, the batch is reserved before
        dispatch and trimmed at the cap: rows past it come back budget-exhausted and uncharged."""
        for spec in specs:
            self._check_control(spec)
        res = ledger.reserve(len(specs)) if ledger is not None else None
        granted = res.granted if res is not None else len(specs)
        results: list[RolloutRecord | None] = [None] * len(specs)

        async def one(i: int) -> None:
            written: list[Committed] = []
            async with self.limiter:
                results[i] = await self._rollout(specs[i], decoding, _Slot(ledger, res, i), written)
            for commit in written:  # the record is durable before the batch returns, waited for outside the slot
                await commit

        try:
            async with anyio.create_task_group() as tg:
                for i in range(granted):
                    tg.start_soon(one, i)
        finally:
            if ledger is not None and res is not None and res.open_slots:
                ledger.release(res)  # only reached when the batch was cancelled or crashed
        for i in range(granted, len(specs)):
            results[i] = await self._exhausted(specs[i])
        return [r for r in results if r is not None]

    async def run(self, spec: RolloutSpec, decoding: Decoding,
                  ledger: BudgetLedger | None = None) -> RolloutRecord:
        return (await self.run_batch([spec], decoding, ledger))[0]

    def _check_control(self, spec: RolloutSpec) -> None:
        """A coalition mask only in the optimize phase, and only on a runtime that claims masks."""
        if spec.control is None:
            return
        if spec.phase != Phase.OPTIMIZE:
            raise ContractError(f"a member mask (optimizer_control) in phase {spec.phase}: masks are optimize-only")
        if not getattr(self.topology, "member_masks", False):
            raise ContractError(f"topology {self.topology.name} does not honour coalition masks (optimizer_control)")

    # ------------------------------------------------------------------ one rollout
    def _node_id(self, spec: RolloutSpec) -> str:
        return f"{spec.phase}/{spec.row.id}/{spec.rollout_key[:16]}"

    async def _rollout(self, spec: RolloutSpec, decoding: Decoding, slot: _Slot,
                       written: list[Committed]) -> RolloutRecord:
        stored = await self.store.find_rollout(spec.rollout_key) if self.record_calls else None
        if stored is not None and not self._recover(spec, stored):
            record = RolloutRecord.model_validate(stored).model_copy(update={"replayed": True})
            for _ in range(record.attempts - (1 if record.status.usable else 0)):
                slot.infra_attempt()
            charged = slot.commit(record.status)
            if spec.phase == Phase.OPTIMIZE and slot.ledger is not None:  # the ledger's story in every generation
                written.append(self.store.submit(lambda conn: self.store.op_mutation(
                    conn, MutationType.LEDGER_COMMITTED, "run", self.store.run_id, actor=Actor.LEDGER,
                    new={"rollout": record.rollout_id, "status": record.status.value, "charged": charged,
                         "replayed": True})))
            return self._emit(record)
        node_id = self._node_id(spec)
        self._executed.add(spec.rollout_key)
        if self.record_calls:
            # The rollout's node: not awaited when new, as every later op of the rollout is queued after it (the
            # writer is FIFO) and the rollout's final op is awaited; a recovered rollout needs to know if it exists.
            added = self.store.submit(lambda conn: self.store.op_node(
                conn, node_id=node_id, parent_id=self.run_node, instance_key=spec.row.id, task_key=spec.phase,
                status=NodeStatus.RUNNING, worker_key=None, level=1, actor=Actor.RUNNER))
            if stored is not None and not await added:
                await self.store.set_node_status(
                    node_id, NodeStatus.RUNNING, actor=Actor.RUNNER,
                    reason=f"recovery: attempted again with the same request seed in store generation "
                           f"{self.store.generation} (it ended as an infrastructure failure before)")
        outcome, attempts, error = await self._attempts(spec, decoding, node_id, slot)
        record = build_record(spec, node_id, outcome, attempts, error, self._secrets)
        charged = slot.commit(record.status)
        record = record.model_copy(update={"charged": charged})
        if self.record_calls:
            await added  # its error, if any (long committed by now)
            written.append(self._finish(spec, node_id, record))
        return self._emit(record)

    async def _attempts(self, spec: RolloutSpec, decoding: Decoding, node_id: str, slot: _Slot
                        ) -> tuple[Outcome | None, int, BaseException | None]:
        """Up to 1 + MAX_INFRA_RETRIES attempts with the same seed: (outcome or None, attempts, last error)."""
        attempts = 0
        last_error: BaseException | None = None
        outcome: Outcome | None = None
        async for attempt in retrying(self.retry, spec.rollout_key, MAX_INFRA_RETRIES + 1,
                                      (InfrastructureError, ScorerError), reraise_last=False):
            with attempt:
                attempts = attempt.retry_state.attempt_number
                try:
                    try:
                        outcome = await self._attempt(spec, decoding, node_id, attempts)
                    except Exception as raw:  # contained: an attempt failure, or re-raised if it ends the job
                        raise attempt_failure(raw) from raw
                except (InfrastructureError, ScorerError) as exc:
                    last_error = exc
                    slot.infra_attempt()
                    if self.record_calls:
                        await self.store.set_node_status(
                            node_id, NodeStatus.FAILED, actor=Actor.RUNNER, reason=f"attempt {attempts}: {exc}",
                            extra={"failure": {"kind": NodeFailureKind.INFRA_ERROR, "message": str(exc)[:2000],
                                               "exception_type": type(exc).__name__, "attempt": attempts}})
                    raise
        return outcome, attempts, last_error

    def _recover(self, spec: RolloutSpec, stored: dict[str, Any]) -> bool:
        """A stored infrastructure failure from an earlier process is attempted again (recovery by re-running)."""
        return (stored.get("status") == RolloutStatus.INFRASTRUCTURE_FAILURE.value
                and not stored.get("budget_exhausted") and spec.rollout_key not in self._executed)

    async def _attempt(self, spec: RolloutSpec, decoding: Decoding, node_id: str,
                       attempt: int) -> Outcome:
        execution_id = f"{node_id}#g{self.store.generation}a{attempt}"
        row = spec.row
        executor = None
        tool_call = self._tool_call
        if tool_call is not None:
            async def run_tool(name: str, args: Any) -> str:
                return await tool_call(row, name, args)

            executor = run_tool
        ctx = RecordedAgentContext(store=self.store, pool=self.pool, rollout_node=node_id,
                                   execution_id=execution_id, rollout_seed=spec.seed, decoding=decoding,
                                   tool_executor=executor, record_calls=self.record_calls, gateway=self.gateway,
                                   secrets=self._secrets, seed_scheme=member_seed_scheme(self.topology.name),
                                   control=spec.control)
        t0 = anyio.current_time()
        if self.record_calls and attempt > 1:
            await self.store.set_node_status(node_id, NodeStatus.RUNNING, actor=Actor.RUNNER,
                                             reason=f"retry attempt {attempt} with the same request seed")
        try:
            with anyio.fail_after(self.attempt_timeout):
                output = await self.topology.run(row, spec.bundle, ctx, self.bench)
        except TimeoutError as exc:
            raise EndpointTimeout(f"rollout attempt exceeded its deadline of {self.attempt_timeout} s") from exc
        finally:
            self.calls.replayed += ctx.replayed_calls
        if ctx.calls_observed == 0:
            raise ScorerError("zero observed model calls")
        if spec.control is not None and not (output.metadata.get(CONTROL_KEY) or {}).get("acknowledged"):
            raise ContractError(f"topology {self.topology.name} did not acknowledge the rollout's member mask")
        try:
            if self._score_async is not None:
                score = await self._score_async(row, output)
            else:
                score = self.bench.score(row, output)
        except Exception as exc:
            raise ScorerError(f"scorer raised {type(exc).__name__}: {exc}") from exc
        # Native-call answers (BFCL) are tool calls the model made but nobody executes: they count as tool calls too.
        usage = ctx.usage + Usage(n_tool_calls=len(output.tool_calls)) if output.tool_calls else ctx.usage
        return output, score, usage, anyio.current_time() - t0

    def _finish(self, spec: RolloutSpec, node_id: str, record: RolloutRecord) -> Committed:
        """The rollout's final store op, queued; `run_batch` awaits its commit after the rollout left its slot."""
        return self.store.submit(finish_op(self.store, spec, node_id, record, self.bench.scorer_id))

    async def _exhausted(self, spec: RolloutSpec) -> RolloutRecord:
        node_id = self._node_id(spec)
        record = RolloutRecord(
            rollout_id=node_id, example_id=spec.row.id, phase=spec.phase, status=RolloutStatus.SEMANTIC_FAILURE,
            score=0.0, feedback=BUDGET_EXHAUSTED_ERROR, request_seed=spec.seed, bundle_sha256=spec.bundle.digest,
            attempts=0, error_kind="budget_exhausted", error=BUDGET_EXHAUSTED_ERROR, budget_exhausted=True,
            metadata={"budget_exhausted": True, "position": spec.position},
        )
        if self.record_calls:
            store = self.store

            def op(conn: Any) -> None:
                if store.op_node(conn, node_id=node_id, parent_id=self.run_node, instance_key=spec.row.id,
                                 task_key=spec.phase, status=NodeStatus.PENDING, worker_key=None, level=1,
                                 actor=Actor.RUNNER):
                    store.op_status(conn, node_id, NodeStatus.SKIPPED, actor=Actor.LEDGER, reason=BUDGET_EXHAUSTED_ERROR,
                                    extra={"failure": {"kind": NodeFailureKind.BUDGET_EXHAUSTED, "message": BUDGET_EXHAUSTED_ERROR}})

            await store.write(op)
        return self._emit(record)

    def _emit(self, record: RolloutRecord) -> RolloutRecord:
        if self.on_record is not None:
            self.on_record(record)
        return record

