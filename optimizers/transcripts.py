"""Role outputs of recorded rollouts, read through the optimizer seam's async transcript read
(core.optimizer.SessionRunner.transcripts), for the methods whose credit code reads them synchronously (MAPRO's
potentials and demos, MASPO's credit and mining).

A method loads a batch's usable records as the batch returns (`await outputs.load(records)`: one read off the
event loop for the batch); `outputs(record)` is then a memory lookup: the last reply text of every role, in the
order the roles first spoke (core.transcript.Transcript.role_outputs). Only usable records are read (an
infrastructure failure's partial output is no observation; a budget-exhausted row ran nothing). At most
`max_chars` characters are kept, the newest batches first; asking for a usable record that was never loaded or
was evicted is a ContractError, never a silent empty answer. A runner without transcripts yields {} (a test's
stand-in).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from core.errors import ContractError
from core.models import RolloutRecord
from core.optimizer import OptimizerRunner

MAX_CHARS = 16_000_000  # a few hundred rollouts of 1 MB replies


class RoleOutputs:
    def __init__(self, runner: OptimizerRunner, max_chars: int = MAX_CHARS):
        self.runner, self.max_chars = runner, max_chars
        self._found: OrderedDict[str, dict[str, str]] = OrderedDict()
        self._chars = 0
        self.reads = callable(getattr(runner, "transcripts", None))

    async def load(self, records: Sequence[RolloutRecord]) -> None:
        wanted = [r for r in records if r.usable and r.rollout_id not in self._found]
        if not wanted or not self.reads:
            return
        found = await getattr(self.runner, "transcripts")(wanted)
        for transcript in found:
            outputs = transcript.role_outputs()
            self._found[transcript.rollout_id] = outputs
            self._chars += sum(len(t) for t in outputs.values())
        keep = {r.rollout_id for r in wanted}
        while self._chars > self.max_chars and next(iter(self._found)) not in keep:
            _, dropped = self._found.popitem(last=False)
            self._chars -= sum(len(t) for t in dropped.values())

    def __call__(self, record: RolloutRecord) -> dict[str, str]:
        if not self.reads or not record.usable:
            return {}
        found = self._found.get(record.rollout_id)
        if found is None:
            raise ContractError(f"the transcript of rollout {record.rollout_id!r} was not loaded (or was evicted)")
        return dict(found)
