"""SIMULATION: the simulated endpoint's judge. Its verdicts are scripted, not model judgements.

MAPRO (protocol 8.3) and MASPO (8.4) ask the TASK model to judge; on the simulated endpoint those requests are
answered here, deterministically, from the request text and the gold answer, so that tests can predict what MAP
picks and what the beam keeps. A request is a judge request when its messages contain `<judge_task>KIND</judge_task>`
(the tag the methods' judge prompts carry; optimizers/mapro/prompts.py, optimizers/maspo/prompts.py and
optimizers/maspo/templates.py). With M the failure modes of the loaded benchmarks, "needed" = the modes whose
`feedback_pattern` matches the transcript's feedback (the text after the last "## Feedback" heading, written by
the scorer against the gold answer), and "carries m" = the prompt contains m.remedy (case-insensitive), the reply is:

* node  (`<candidate_prompt>`):   `Score: min(10, 4 + 3 * #needed carried + #other modes carried)`
* edge  (`<sender_prompt>`, `<receiver_prompt>`): `Score: min(10, 4 + 2 * #modes carried by both prompts)`
* blame (`<role_prompt>`):        `Blame: min(10, 3 * #needed modes NOT carried)`
* pairwise (`<response_a>`, `<response_b>`, `Item: <row id>`): both responses are scored by the row's benchmark
  scorer against its gold answer; `Winner: A` / `Winner: B` when exactly one is correct, else `Winner: TIE`.
  An unknown item or kind gets `Winner: TIE` / `Score: 5`.

--- TAVO (protocol 8.8) ---
* subtrajectory (`<segment>`, `Item: <row id>`): the step is scored by the row's benchmark scorer against its gold
  answer (the whole step, and each of its agent turns `[role#member turn t] text`): a step holding a correct
  answer gets `Progress: 9 / Coordination: 8 / Stage: 8`, any other `Progress: 3 / Coordination: 5 / Stage: 5`;
  an unknown item gets 5 on every axis.
--- end TAVO ---

The kinds are the `judge_tasks` the method table declares (core/methods.py; `judge_tasks()` lists them); each has
one scripted verdict in `SimJudge.VERDICTS` (tests/optimizers/test_sim_judge.py checks that none is missing), and a
declared kind without one is answered as an unknown kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from core.methods import judge_tasks
from core.models import AgentOutput, Row
from core.simulation import FailureMode, SimulatedBenchmark

__all__ = ["SimJudge", "judge_kind", "judge_tasks", "unscripted_judge_tasks"]

_KIND_RE = re.compile(r"<judge_task>(\w+)</judge_task>")
_ITEM_RE = re.compile(r"(?m)^Item: (\S+)\s*$")
_TURN_RE = re.compile(r"(?m)^\[\w+#\d+ turn \d+\] (.*)$")  # TAVO: an agent turn of a rendered step


def judge_kind(text: str) -> str | None:
    found = _KIND_RE.search(text)
    return found.group(1) if found else None


def _section(text: str, tag: str) -> str:
    found = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return found.group(1) if found else ""


def _feedback(text: str) -> str:
    parts = text.split("## Feedback")
    return "\n".join(p.split("</transcript>")[0] for p in parts[1:])


def _carries(prompt: str, mode: FailureMode) -> bool:
    return mode.remedy.lower() in prompt.lower()


class SimJudge:
    def __init__(self, modes: Sequence[FailureMode], find_row: Callable[[str], tuple[SimulatedBenchmark, Row] | None]):
        self.modes = tuple(modes)
        self.find_row = find_row

    def reply(self, text: str) -> str:
        verdict = self.VERDICTS.get(judge_kind(text) or "")
        return verdict(self, text) if verdict is not None else "Score: 5"

    def _node(self, text: str) -> str:
        return f"Score: {self.node(_section(text, 'candidate_prompt'), _feedback(text))}"

    def _edge(self, text: str) -> str:
        shared = sum(_carries(_section(text, "sender_prompt"), m) and _carries(_section(text, "receiver_prompt"), m)
                     for m in self.modes)
        return f"Score: {min(10, 4 + 2 * shared)}"

    def _blame(self, text: str) -> str:
        prompt = _section(text, "role_prompt")
        missing = sum(1 for m in self.needed(_feedback(text)) if not _carries(prompt, m))
        return f"Blame: {min(10, 3 * missing)}"

    def _pairwise(self, text: str) -> str:
        return f"Winner: {self.pairwise(text)}"

    # --- TAVO (protocol 8.8): the sub-trajectory verdict ---
    def _subtrajectory(self, text: str) -> str:
        scores = self.subtrajectory(text)
        return "\n".join(f"{axis}: {v}" for axis, v in zip(("Progress", "Coordination", "Stage"), scores))

    def subtrajectory(self, text: str) -> tuple[int, int, int]:
        item = _ITEM_RE.search(text)
        found = self.find_row(item.group(1)) if item else None
        if found is None:
            return 5, 5, 5
        bench, row = found
        step = _section(text, "segment")
        parts = [step, *(m.group(1) for m in _TURN_RE.finditer(step))]
        return (9, 8, 8) if any(self._correct(bench, row, part) for part in parts) else (3, 5, 5)
    # --- end TAVO ---

    # judge kind -> its scripted verdict (the kinds are the methods' `judge_tasks`, core/methods.py)
    VERDICTS: ClassVar[dict[str, Callable[["SimJudge", str], str]]] = {"node": _node, "edge": _edge, "blame": _blame,
                                                             "pairwise": _pairwise,
                                                             "subtrajectory": _subtrajectory}  # TAVO

    def needed(self, feedback: str) -> list[FailureMode]:
        return [m for m in self.modes if re.search(m.feedback_pattern, feedback)]

    def node(self, candidate: str, feedback: str) -> int:
        needed = self.needed(feedback)
        carried = [m for m in self.modes if _carries(candidate, m)]
        return min(10, 4 + 3 * sum(m in needed for m in carried) + sum(m not in needed for m in carried))

    def pairwise(self, text: str) -> str:
        item = _ITEM_RE.search(text)
        found = self.find_row(item.group(1)) if item else None
        if found is None:
            return "TIE"
        bench, row = found
        a, b = (self._correct(bench, row, _section(text, tag)) for tag in ("response_a", "response_b"))
        return "A" if a and not b else "B" if b and not a else "TIE"

    @staticmethod
    def _correct(bench: SimulatedBenchmark, row: Row, response: str) -> bool:
        try:
            return bench.score(row, AgentOutput(text=response)).value >= 1.0
        except Exception:  # noqa: BLE001 - a scorer that cannot read the response: not correct
            return False




def unscripted_judge_tasks() -> tuple[str, ...]:
    """The registered methods' judge kinds this simulated judge has no verdict for (answered `Score: 5`)."""
    return tuple(kind for kind in judge_tasks() if kind not in SimJudge.VERDICTS)
