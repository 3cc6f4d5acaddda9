"""TAVO's sub-trajectory judge and its Eq.-3 credit (protocol 8.8).

Each sub-trajectory (optimizers/tavo/segments.py) is scored 1-10 on progress, coordination and stage
appropriateness by the judge (the TASK model's `judge` component, T 0.3 as upstream; recorded, uncharged,
replayed on resume). Its quality q = (mean of the three scores - 1) / 9, in [0, 1]; a malformed or failed reply is
neutral (5 on each axis).

Eq. 3, per (example e, role r): the trajectory-aware credit of r in e is the mean quality of the sub-trajectories
r spoke in, shifted by the team's outcome,

    c(e, r) = mean_{k : r in k} q_k  -  (1 - R_e)          R_e = the rollout's 0/1 score

so credit lies in [0, 1] on a solved example and in [-1, 0] on a failed one, where the role whose steps the judge
rated worst carries the most blame. (Our reading: the protocol names the equation, not its terms.) A role that
did not speak in e gets no credit there. With credit off (TAVO_CREDIT=0) no judge call is made and every (e, r)
gets R_e - 0.5 (outcome only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from core.errors import InfrastructureError
from core.models import RolloutRecord, Row
from core.optimizer import ModelClient
from optimizers.mapro.potentials import gather
from optimizers.reflective_dataset import task_text
from optimizers.tavo.segments import Segment

JUDGE_TASK = "subtrajectory"  # the judge kind declared in the method table (core/methods.py), scripted by the sim
JUDGE_TEMPERATURE = 0.3
AXES = ("Progress", "Coordination", "Stage")
NEUTRAL = 5
_AXIS_RE = {axis: re.compile(rf"(?im)^\s*{axis}\s*[:=]\s*(\d+)") for axis in AXES}


def judge_prompt(row: Row, segment: Segment, n_segments: int, outcome: str) -> str:
    return (f"<judge_task>{JUDGE_TASK}</judge_task>\nItem: {row.id}\n"
            "You rate one step (sub-trajectory) of a multi-agent team's work on a task, from 1 (harmful) to 10 "
            "(ideal), on three axes: progress toward solving the task, coordination with the other agents, and "
            "appropriateness for the stage of the work it happens in.\n"
            f"## Task\n{task_text(row)[:2000]}\n## Step {segment.index + 1} of {n_segments} (roles: "
            f"{', '.join(segment.roles)}; team outcome: {outcome})\n<segment>\n{segment.render()}\n</segment>\n"
            "Answer with exactly three lines:\nProgress: <1-10>\nCoordination: <1-10>\nStage: <1-10>")


def parse_scores(reply: str) -> tuple[int, int, int]:
    found = []
    for axis in AXES:
        hits = _AXIS_RE[axis].findall(reply or "")
        found.append(min(10, max(1, int(hits[-1]))) if hits else NEUTRAL)
    return found[0], found[1], found[2]


def quality(scores: tuple[int, int, int]) -> float:
    return (sum(scores) / 3 - 1) / 9


def eq3_credit(qualities: Sequence[float], reward: float) -> float:
    return sum(qualities) / len(qualities) - (1.0 - reward)


@dataclass(frozen=True)
class Scored:
    segment: Segment
    scores: tuple[int, int, int]


@dataclass(frozen=True)
class Case:
    """One (example, role) with its credit and what the reflection sees of it."""

    row: Row
    role: str
    reward: float
    credit: float
    steps: tuple[Scored, ...]
    feedback: str


async def score_segments(judge: ModelClient, row: Row, record: RolloutRecord, segs: Sequence[Segment],
                         key: str, threads: int) -> list[Scored]:
    outcome = "solved" if (record.score or 0.0) >= 1.0 else "failed"

    async def one(seg: Segment) -> Scored:
        try:
            reply = await judge.complete([{"role": "user", "content": judge_prompt(row, seg, len(segs), outcome)}],
                                         purpose="tavo.subtrajectory", key=f"{key}|row={row.id}|seg={seg.index}",
                                         temperature=JUDGE_TEMPERATURE)
        except InfrastructureError:
            reply = ""
        return Scored(seg, parse_scores(reply))

    return list(await gather([partial(one, s) for s in segs], threads))


def cases_of(row: Row, record: RolloutRecord, scored: Sequence[Scored], roles: Sequence[str],
             use_credit: bool) -> list[Case]:
    """The (example, role) cases of one usable rollout, in team role order (roles that did not speak: none)."""
    reward = float(record.score or 0.0)
    out = []
    for role in roles:
        mine = [s for s in scored if role in s.segment.roles]
        if not mine:
            continue
        credit = eq3_credit([quality(s.scores) for s in mine], reward) if use_credit else reward - 0.5
        out.append(Case(row, role, reward, credit, tuple(mine), record.feedback or ""))
    return out
