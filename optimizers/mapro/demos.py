"""MAPRO's demonstrations, "demos on" of protocol 8.3 (pure: recorded rollouts in, selections and text out).

The paper (Zhang et al., arXiv 2510.07475, "Initialization") collects few-shot preference demonstrations,
accepted (d+) and rejected (d-) executions of the MAS on a mini-batch of tasks. Protocol 8.3 says only "demos on";
what this implementation decided where it is silent:

* Source: a demonstration is one role's own invocation in a train rollout MAPRO already ran (the seed pass and the
  later train passes): the row's task and the role's recorded output (the last reply of that role,
  `SessionRunner.transcripts`; the terminal role falls back to the team's final output when it has no text, e.g.
  tool calls only). So demos cost no rollout: charging and the plan are exactly those of MAPRO without them.
  Only usable records are ever read (optimizers/scoring.py, protocol 5.3): an infrastructure failure is never a
  demonstration, accepted or rejected. Accepted = `success` with score 1; rejected = a usable record scoring < 1.
* Demo pools: per role at most DEMOS_PER_ROLE = 3 accepted demonstrations from the train pass of the incumbent
  (the best train mean so far: the seed pass first), rebuilt each time the incumbent changes. With more than 3
  candidates, 3 are drawn by the method's one `random.Random(method_rng_seed("mapro", seed))` and kept in input
  (row) order; with 3 or fewer there is no draw. The pool is rendered into the role prompt text after the
  instruction, under DEMO_HEADING (the runtimes send `roles` on the wire; `PromptBundle.demos` is not rendered by
  any of them, so it stays the seed bundle's), each field head+tail capped to DEMO_CHARS (as MIPRO's demo strings).
* Preference pairs: the reflection model rewriting role r is shown r's output on a run that succeeded (preferred)
  next to its output on one that failed (rejected), when both exist. Rejected = the first shown failing transcript
  with an output of r; preferred = an accepted demonstration of r on the SAME row from any earlier pass (the latest
  one), else the first accepted one of the latest pass, else of the latest pass that has one. Each side is head+tail
  capped to PAIR_CHARS per field; the rewrite's output caps (init 1,024, mutation 512 tokens) are unchanged.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.models import RolloutRecord, RolloutStatus, Row
from optimizers.reflective_dataset import head_tail, output_text, task_text
from optimizers.scoring import score_of

DEMOS_PER_ROLE = 3
DEMO_CHARS = 1400   # per field of a rendered demo (task, output), head + tail
PAIR_CHARS = 1200   # per field of a preference-pair side shown to the reflection model
DEMO_HEADING = "MAPRO Selected Demonstrations"
KEPT_CHARS = max(DEMO_CHARS, PAIR_CHARS)  # what an Example keeps of each field


@dataclass(frozen=True)
class Example:
    """One role's invocation in one recorded, usable train rollout."""

    role: str
    example_id: str
    rollout_id: str
    round: int       # the train pass it comes from (0 = seed pass)
    task: str
    output: str
    score: float

    @property
    def accepted(self) -> bool:
        return self.score >= 1.0

    def ref(self) -> dict[str, Any]:
        return {"example_id": self.example_id, "rollout_id": self.rollout_id, "round": self.round,
                "score": self.score}


def examples_of(role: str, terminal: str, rnd: int, row: Row, record: RolloutRecord,
                outputs: Mapping[str, str]) -> Example | None:
    """`role`'s invocation in `record` (None: the record is not usable, or the role left no output in it).
    Accepted examples need status success AND score 1, rejected ones a usable score < 1."""
    score = score_of(record)
    if score is None or (score >= 1.0 and record.status is not RolloutStatus.SUCCESS):
        return None
    text = (outputs.get(role) or "").strip()
    if not text and role == terminal and record.final_output is not None:
        text = output_text(record).strip()
    if not text:
        return None
    # kept no longer than the longest rendering reads (head+tail of head+tail is the same cut): every pass's
    # examples are kept, so a full 1 MB output here would grow memory with the responses
    return Example(role, record.example_id, record.rollout_id, rnd, head_tail(task_text(row), KEPT_CHARS),
                   head_tail(text, KEPT_CHARS), score)


def pick(candidates: Sequence[Example], k: int, rng: random.Random) -> list[Example]:
    """At most k candidates: all of them when there are <= k (no draw), else k drawn by `rng` without
    replacement; always in input order."""
    if len(candidates) <= k:
        return list(candidates)
    return [candidates[i] for i in sorted(rng.sample(range(len(candidates)), k))]


def render_role_prompt(instruction: str, role: str, demos: Sequence[Example]) -> str:
    """The instruction, then the role's demos under DEMO_HEADING (each field head+tail capped)."""
    if not demos:
        return instruction
    blocks = [f"### Demonstration {i}\nTask:\n{head_tail(d.task, DEMO_CHARS)}\n\n"
              f"Output of '{role}':\n{head_tail(d.output, DEMO_CHARS)}" for i, d in enumerate(demos, 1)]
    return (f"{instruction.rstrip()}\n\n{DEMO_HEADING}\n(successful runs of this team on training tasks: the task "
            f"and what '{role}' produced)\n\n" + "\n\n".join(blocks))


@dataclass(frozen=True)
class PreferencePair:
    role: str
    good: Example
    bad: Example

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "preferred": self.good.ref(), "rejected": self.bad.ref()}

    def render(self) -> str:
        def side(tag: str, e: Example) -> str:
            return (f"<{tag}>\nTask:\n{head_tail(e.task, PAIR_CHARS)}\n\nOutput of '{self.role}':\n"
                    f"{head_tail(e.output, PAIR_CHARS)}\n\nScore: {e.score}\n</{tag}>")

        return (f"Preference demonstrations for '{self.role}': its own output on a team run that succeeded "
                f"(preferred) and on one that failed (rejected).\n{side('preferred_output', self.good)}\n"
                f"{side('rejected_output', self.bad)}")


def preference_pair(role: str, rejected: Sequence[Example], accepted: Sequence[Example]) -> PreferencePair | None:
    """`rejected`: failing examples of `role` in the order shown; `accepted`: accepted examples, latest pass
    first (row order within a pass). None unless both exist."""
    bad = next((e for e in rejected if not e.accepted), None)
    good = [e for e in accepted if e.accepted]
    if bad is None or not good:
        return None
    same_row = next((e for e in good if e.example_id == bad.example_id), None)
    return PreferencePair(role, same_row or good[0], bad)


class DemoBook:
    """The usable examples of every train pass MAPRO ran, the current demo pools, and the log of what was built
    (optimizer artifacts `demo_pools`). Nothing here runs a model: the outputs come from recorded rollouts."""

    def __init__(self, roles: Sequence[str], terminal: str, rng: random.Random, k: int = DEMOS_PER_ROLE):
        self.roles, self.terminal, self.rng, self.k = tuple(roles), terminal, rng, k
        self.passes: dict[int, dict[str, dict[str, Example]]] = {}  # round -> role -> example id -> example
        self.pools: dict[str, list[Example]] = {r: [] for r in self.roles}
        self.log: list[dict[str, Any]] = []

    def add_pass(self, rnd: int, rows: Mapping[str, Row], records: Sequence[RolloutRecord],
                 outputs_of: Callable[[RolloutRecord], Mapping[str, str]]) -> None:
        per_role: dict[str, dict[str, Example]] = {r: {} for r in self.roles}
        for rec in records:
            if score_of(rec) is None:  # an unusable record's outputs are never read
                continue
            outputs = outputs_of(rec)
            for role in self.roles:
                found = examples_of(role, self.terminal, rnd, rows[rec.example_id], rec, outputs)
                if found is not None:
                    per_role[role][rec.example_id] = found
        self.passes[rnd] = per_role

    def rebuild(self, rnd: int) -> None:
        """The demo pools from the accepted examples of pass `rnd` (the new incumbent's), in role order."""
        per_role = self.passes[rnd]
        self.pools = {r: pick([e for e in per_role[r].values() if e.accepted], self.k, self.rng) for r in self.roles}
        self.log.append({"round": rnd, "pools": {r: [e.ref() for e in p] for r, p in self.pools.items()}})

    def render(self, role: str, instruction: str) -> str:
        return render_role_prompt(instruction, role, self.pools[role])

    def ids(self) -> dict[str, list[str]]:
        return {r: [e.example_id for e in p] for r, p in self.pools.items()}

    def pair(self, role: str, rnd: int, shown: Sequence[RolloutRecord]) -> PreferencePair | None:
        """The preference pair for rewriting `role` after showing `shown` (records of pass `rnd`)."""
        mine = self.passes.get(rnd, {}).get(role, {})
        rejected = [mine[r.example_id] for r in shown
                    if r.example_id in mine and mine[r.example_id].rollout_id == r.rollout_id]
        accepted = [e for k in sorted(self.passes, reverse=True) for e in self.passes[k][role].values()
                    if e.accepted]
        return preference_pair(role, rejected, accepted)
