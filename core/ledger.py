"""The rollout budget ledger (protocol-v1 section 5.3).

Reserve before dispatch; a request is trimmed to the free slots; every reserved slot is closed by exactly one
commit (one outcome per slot) or released unattempted. Only `success` and `semantic_failure` are charged;
infrastructure failures are counted as attempts and retries but refunded.

Closed-ledger invariants: reserved = 0; charged = successful + semantic_failures;
attempted = charged + infrastructure_failures; retries = infrastructure_failures; remaining = maximum - charged;
charged <= maximum always.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import BudgetError
from core.models import RolloutStatus


@dataclass(frozen=True)
class LedgerSnapshot:
    maximum: int
    charged: int
    reserved: int
    remaining: int
    attempted: int
    successful: int
    semantic_failures: int
    infrastructure_failures: int
    retries: int
    budget_exhausted_requests: int

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)

    @property
    def closed(self) -> bool:
        return self.reserved == 0

    def violations(self) -> list[str]:
        """Closed-ledger invariant violations (empty when the ledger is closed and consistent)."""
        problems = []
        if self.reserved != 0:
            problems.append(f"reserved={self.reserved} (open reservations)")
        if self.charged != self.successful + self.semantic_failures:
            problems.append("charged != successful + semantic_failures")
        if self.attempted != self.charged + self.infrastructure_failures:
            problems.append("attempted != charged + infrastructure_failures")
        if self.retries != self.infrastructure_failures:
            problems.append("retries != infrastructure_failures")
        if self.remaining != self.maximum - self.charged:
            problems.append("remaining != maximum - charged")
        if self.charged > self.maximum:
            problems.append("charged > maximum (overshoot)")
        return problems


@dataclass
class Reservation:
    id: int
    requested: int
    granted: int
    _open: set[int] = field(default_factory=set)

    @property
    def open_slots(self) -> frozenset[int]:
        return frozenset(self._open)

    @property
    def trimmed(self) -> bool:
        return self.granted < self.requested


class BudgetLedger:
    """Single source of truth for the usable-rollout budget of one job. Plain synchronous object."""

    def __init__(self, maximum: int):
        if maximum <= 0:
            raise BudgetError(f"budget must be positive, got {maximum}")
        self.maximum = maximum
        self._charged = 0
        self._reserved = 0
        self._attempted = 0
        self._successful = 0
        self._semantic = 0
        self._infra = 0
        self._exhausted_requests = 0
        self._next_id = 0
        self._reservations: dict[int, Reservation] = {}

    @property
    def free(self) -> int:
        return self.maximum - self._charged - self._reserved

    def reserve(self, requested: int) -> Reservation:
        """Reserve up to `requested` slots; the grant is trimmed to the free slots (possibly 0)."""
        if requested < 0:
            raise BudgetError("cannot reserve a negative number of slots")
        granted = min(requested, max(self.free, 0))
        res = Reservation(id=self._next_id, requested=requested, granted=granted, _open=set(range(granted)))
        self._next_id += 1
        self._reserved += granted
        self._exhausted_requests += requested - granted
        if granted:
            self._reservations[res.id] = res
        return res

    def note_infrastructure_attempt(self, res: Reservation, slot: int) -> None:
        """One attempt of an open slot failed for infrastructure reasons (it will be retried or refunded)."""
        self._check_open(res, slot)
        self._attempted += 1
        self._infra += 1

    def commit(self, res: Reservation, slot: int, status: RolloutStatus) -> bool:
        """Close one slot with its final outcome. Returns True when the slot was charged."""
        self._check_open(res, slot)
        res._open.discard(slot)
        self._reserved -= 1
        if not res._open:
            self._reservations.pop(res.id, None)
        if status is RolloutStatus.INFRASTRUCTURE_FAILURE:
            return False
        if self._charged + 1 > self.maximum:  # unreachable while reserve() trims; kept as a hard guard
            raise BudgetError("commit would exceed the budget")
        self._charged += 1
        self._attempted += 1
        if status is RolloutStatus.SUCCESS:
            self._successful += 1
        else:
            self._semantic += 1
        return True

    def release(self, res: Reservation) -> int:
        """Release every still-open slot of a reservation unattempted (commit-prefix / cancel)."""
        n = len(res._open)
        self._reserved -= n
        res._open.clear()
        self._reservations.pop(res.id, None)
        return n

    def _check_open(self, res: Reservation, slot: int) -> None:
        if res.id not in self._reservations or slot not in res._open:
            raise BudgetError(f"slot {slot} of reservation {res.id} is not open")

    def snapshot(self) -> LedgerSnapshot:
        return LedgerSnapshot(
            maximum=self.maximum,
            charged=self._charged,
            reserved=self._reserved,
            remaining=self.maximum - self._charged,
            attempted=self._attempted,
            successful=self._successful,
            semantic_failures=self._semantic,
            infrastructure_failures=self._infra,
            retries=self._infra,
            budget_exhausted_requests=self._exhausted_requests,
        )
