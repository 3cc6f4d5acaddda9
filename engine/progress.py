"""Progress of whatever is sending requests, on stderr (structlog), so a slow endpoint never means silence.

One `Progress` is the runner's `on_record` hook. It is in one of two modes:

* optimize (the default): charged/budget from the ledger, attempts, infrastructure failures, rate of charged
  rollouts and an ETA to the budget (an upper bound: a method may stop earlier);
* an evaluation (`begin(label, total)` ... `end()`, called by the Evaluator): done/total rollouts, failures by
  kind, rate and ETA of that evaluation; a start line and an end line always, and in between at most one line
  every `interval` seconds.

In both modes the line ends with the method's model-call failures when there are any (reflection, judge, probe
calls that gave the method no text, by kind: `reflection failures 3 (context_length_exceeded 3)`), read from the
`clients` given (anything with `failures() -> {kind: count}`).

Lines are throttled by time (`clock` is injectable for tests), never by count only, so a 600-rollout phase on a
fast endpoint prints a handful of lines and a slow one still prints one every few seconds.

Rollouts replayed from the store (a resumed job: `record.replayed`) are counted apart (`replayed=N` on the line,
`replayed_rollouts` for the resume line) and never in a rate or ETA: those measure the live rollouts only, so a
resumed job does not show the speed of reading its store. `prefix` starts every line (a smoke run's `[smoke 3] `).
`report` (optional; a sweep passes one, engine/sweep/live.py) receives a `ProgressSnapshot` of the same figures
at every phase start and end and otherwise at most once every `report_interval` seconds, whether or not the job is
quiet: the sweep records it in sweep.sqlite for `sweep status`. The job never learns who listens.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.ledger import BudgetLedger
from core.models import RolloutRecord, RolloutStatus
from engine.log import get_logger

log = get_logger("engine.progress")


@dataclass(frozen=True)
class ProgressSnapshot:
    """The job's progress now: its phase (`optimize`, `validation evaluation`, ...), that phase's rollouts done /
    planned (optimize: charged / budget), its failures by kind (rollout statuses, and the method's model-call
    failures as `<component>:<kind>`), rate (rollouts/s of this phase) and ETA (s, of this phase), and
    `rollouts`: every rollout the job has completed so far in all its phases of this process; of them `replayed`
    were read back from its store (a resumed job) and `shared` answered by the sweep's shared evaluation cache
    (another job's evaluation of the same bundle: no endpoint request), so `rollouts - replayed - shared` is the
    work the endpoints did for this job."""

    phase: str
    done: int
    total: int
    failures: dict[str, int]
    rate: float | None
    eta: float | None
    rollouts: int
    replayed: int = 0
    shared: int = 0


@dataclass
class _Phase:
    label: str
    total: int
    started: float
    done: int = 0
    replayed: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in RolloutStatus})


def _eta(remaining: int, done: int, elapsed: float) -> float | None:
    if remaining <= 0:
        return 0.0
    if done <= 0 or elapsed <= 0:
        return None
    return round(remaining / (done / elapsed), 1)


class Progress:
    def __init__(self, ledger: BudgetLedger | None, quiet: bool, *, interval: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, clients: Mapping[str, Any] | None = None,
                 prefix: str = "", report: Callable[[ProgressSnapshot], None] | None = None,
                 report_interval: float = 1.0):
        self.ledger, self.quiet, self.interval, self.clock = ledger, quiet, interval, clock
        self.clients = dict(clients or {})
        self.prefix = prefix
        self.replayed_rollouts = 0  # every rollout replayed from the store, all phases
        self._replayed_charged = 0  # of them, the optimize phase's charged ones (not live work)
        self.shared_rollouts = 0  # rollouts the shared evaluation cache answered (engine/job/evaluation.py)
        self.report, self.report_interval = report, report_interval
        self._phase: _Phase | None = None
        self._started = clock()
        self._last_line = float("-inf")
        self._last_report = float("-inf")
        self._last_charged = 0
        self._evaluated = 0  # rollouts of the evaluations that ended

    def model_failures(self) -> dict[str, dict[str, int]]:
        """The method's model-call failures per component and kind (components without any left out)."""
        found = {name: client.failures() for name, client in sorted(self.clients.items())}
        return {name: kinds for name, kinds in found.items() if kinds}

    def _failures_text(self) -> str:
        parts = [f"{name} failures {sum(kinds.values())} ("
                 + ", ".join(f"{kind} {n}" for kind, n in kinds.items()) + ")"
                 for name, kinds in self.model_failures().items()]
        return (" " + " ".join(parts)) if parts else ""

    # ------------------------------------------------------------------ evaluations
    def begin(self, label: str, total: int) -> None:
        self._phase = _Phase(label, total, self.clock())
        self._emit(force=True)
        self._report(force=True)

    def end(self) -> None:
        if self._phase is not None:
            self._emit(force=True)
            self._report(force=True)
            self._evaluated += self._phase.done
        self._phase = None

    def served_from_cache(self, rollouts: int) -> None:
        """The evaluation that just ran was answered by the shared evaluation cache: its rollouts were no work."""
        self.shared_rollouts += rollouts

    # ------------------------------------------------------------------ the listener's snapshot
    def snapshot(self) -> ProgressSnapshot:
        now, phase = self.clock(), self._phase
        model = {f"{name}:{kind}": n for name, kinds in self.model_failures().items() for kind, n in kinds.items()}
        charged = self.ledger.snapshot().charged if self.ledger is not None else 0
        if phase is not None:
            elapsed = now - phase.started
            failures = {k: n for k, n in phase.counts.items() if k != "success" and n}
            live = phase.done - phase.replayed  # replayed rollouts are not work done at this rate
            return ProgressSnapshot(phase.label, phase.done, phase.total, {**failures, **model},
                                    round(live / elapsed, 3) if elapsed > 0 else None,
                                    _eta(phase.total - phase.done, live, elapsed),
                                    charged + self._evaluated + phase.done, self.replayed_rollouts,
                                    self.shared_rollouts)
        snap = self.ledger.snapshot() if self.ledger is not None else None
        if snap is None:
            return ProgressSnapshot("starting", 0, 0, model, None, None, self._evaluated, self.replayed_rollouts,
                                    self.shared_rollouts)
        elapsed = now - self._started
        failures = {k: n for k, n in (("semantic_failure", snap.semantic_failures),
                                      ("infrastructure_failure", snap.infrastructure_failures)) if n}
        live = snap.charged - self._replayed_charged
        return ProgressSnapshot("optimize", snap.charged, snap.maximum, {**failures, **model},
                                round(live / elapsed, 3) if elapsed > 0 else None,
                                _eta(snap.maximum - snap.charged, live, elapsed), charged + self._evaluated,
                                self.replayed_rollouts, self.shared_rollouts)

    def _report(self, force: bool) -> None:
        now = self.clock()
        if self.report is None or (not force and now - self._last_report < self.report_interval):
            return
        self._last_report = now
        self.report(self.snapshot())

    # ------------------------------------------------------------------ the runner's hook
    def __call__(self, record: RolloutRecord) -> None:
        phase = self._phase
        if record.replayed:
            self.replayed_rollouts += 1
        if phase is not None:
            phase.done += 1
            phase.replayed += 1 if record.replayed else 0
            phase.counts[record.status.value] += 1
            self._emit(force=False)
        elif self.ledger is not None:
            if record.replayed and record.usable:
                self._replayed_charged += 1
            self._emit_optimize(record)
        self._report(force=False)

    def _emit(self, force: bool) -> None:
        phase, now = self._phase, self.clock()
        if self.quiet or phase is None or (not force and now - self._last_line < self.interval):
            return
        self._last_line = now
        elapsed = now - phase.started
        live = phase.done - phase.replayed
        rate = round(live / elapsed, 2) if elapsed > 0 else None
        infra, semantic = phase.counts["infrastructure_failure"], phase.counts["semantic_failure"]
        eta = _eta(phase.total - phase.done, live, elapsed)
        replayed = f" replayed={phase.replayed}" if phase.replayed else ""
        log.info(f"progress: {self.prefix}{phase.label} {phase.done}/{phase.total}{replayed} failures: "
                 f"infrastructure={infra} semantic={semantic} rate={rate if rate is not None else '-'}/s "
                 f"eta={eta if eta is not None else '-'}s{self._failures_text()}", kind="progress",
                 phase=phase.label, done=phase.done, total=phase.total, replayed=phase.replayed,
                 infrastructure_failures=infra, semantic_failures=semantic, rate_per_s=rate, eta_s=eta,
                 model_call_failures=self.model_failures())

    def _emit_optimize(self, record: RolloutRecord) -> None:
        assert self.ledger is not None
        snap, now = self.ledger.snapshot(), self.clock()
        crossed = snap.charged // 10 > self._last_charged // 10  # every 10 charged, also when the endpoint is fast
        if self.quiet or not (crossed or now - self._last_line >= self.interval):
            return
        self._last_line, self._last_charged = now, snap.charged
        elapsed = now - self._started
        eta = _eta(snap.maximum - snap.charged, snap.charged - self._replayed_charged, elapsed)
        replayed = f" replayed={self._replayed_charged}" if self._replayed_charged else ""
        log.info(f"progress: {self.prefix}charged={snap.charged}/{snap.maximum}{replayed} attempted={snap.attempted} "
                 f"infra={snap.infrastructure_failures} last={record.status.value} "
                 f"eta<={eta if eta is not None else '-'}s{self._failures_text()}", kind="progress",
                 phase="optimize", charged=snap.charged, maximum=snap.maximum, replayed=self._replayed_charged,
                 attempted=snap.attempted,
                 infrastructure_failures=snap.infrastructure_failures, last=record.status.value, eta_s=eta,
                 model_call_failures=self.model_failures())
