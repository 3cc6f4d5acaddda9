"""HiveMind's reflection and its append-only prompt update (protocol 8.5), pure but for the reflection call.

Once per cycle the reflection model (T 0.7) reflects on ONE role's prompt (the lowest-credit worker; the manager
every 3rd cycle) from the cycle's failure cases (reward < 0.5) and success cases, and answers with a LESSONS block
in a ``` fence. The prompt names the role's lessons so far between `<current_instruction>` tags and asks for them
plus the new ones; the new lesson is what the reply adds (lines not among the lessons so far). A role's prompt is
then its SEED prompt + the latest <= MAX_LESSONS lessons under the LESSONS_HEADER: append-only, the seed text is
never rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from core.models import RolloutRecord, Row

REFLECTION_TEMPERATURE = 0.7
FAILURE_BELOW = 0.5
MAX_LESSONS = 6
MAX_CASES = 3  # failure cases and success cases shown, each
MAX_CASE_CHARS = 1500
LESSONS_HEADER = "## Lessons learned"
PURPOSE = "hivemind.lessons"


@dataclass(frozen=True)
class Case:
    row: Row
    record: RolloutRecord

    @property
    def failure(self) -> bool:
        return (self.record.score or 0.0) < FAILURE_BELOW


def cases(rows: Sequence[Row], records: Sequence[RolloutRecord]) -> list[Case]:
    """The usable rollouts of the full coalition, as cases (input order)."""
    return [Case(row, rec) for row, rec in zip(rows, records) if rec.usable]


def _render(case: Case) -> str:
    answer = case.record.final_output.text if case.record.final_output is not None else ""
    task = json.dumps(case.row.task, ensure_ascii=False, sort_keys=True)[:MAX_CASE_CHARS // 2]
    text = (f"Reward: {case.record.score}\nFeedback:\n{(case.record.feedback or '(none)')[:MAX_CASE_CHARS // 2]}"
            f"\n\nTask:\n{task}\n\nTeam answer:\n{answer or '(none)'}")
    return text[:MAX_CASE_CHARS]


def reflection_prompt(role: str, prompt: str, lessons: Sequence[str], found: Sequence[Case]) -> str:
    failures = [c for c in found if c.failure][:MAX_CASES]
    successes = [c for c in found if not c.failure][:MAX_CASES]
    blocks = [
        f"You are improving the prompt of the agent `{role}` of a multi-agent team. Its credit (Shapley value over "
        "coalitions of the team) was the lowest this cycle, or it is the manager's turn.",
        f"<role_prompt>\n{prompt}\n</role_prompt>",
        "Failure cases (reward < 0.5):\n\n" + ("\n\n---\n\n".join(_render(c) for c in failures) or "(none)"),
        "Success cases:\n\n" + ("\n\n---\n\n".join(_render(c) for c in successes) or "(none)"),
        "The agent's lessons so far:\n<current_instruction>\n" + "\n".join(lessons) + "\n</current_instruction>",
        "Write the LESSONS block: the lessons so far, then one short, general lesson per failure pattern above "
        "that the agent should follow (one per line). Reply with the block in a ``` fence.",
    ]
    return "\n\n".join(blocks)


def new_lesson(reply_block: str | None, lessons: Sequence[str]) -> str | None:
    """What the LESSONS block adds to the lessons so far (None: nothing new)."""
    if not reply_block:
        return None
    known = {line.strip() for lesson in lessons for line in lesson.splitlines()}
    fresh = [line.strip() for line in reply_block.splitlines() if line.strip() and line.strip() not in known]
    return "\n".join(fresh) or None


def compose(seed_prompt: str, lessons: Sequence[str]) -> str:
    """The seed prompt + the latest <= MAX_LESSONS lessons under the header (the seed prompt alone without any)."""
    latest = list(lessons)[-MAX_LESSONS:]
    if not latest:
        return seed_prompt
    return f"{seed_prompt.rstrip()}\n\n{LESSONS_HEADER}\n" + "\n".join(f"- {lesson}" for lesson in latest)
