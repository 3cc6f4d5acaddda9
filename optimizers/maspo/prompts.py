"""MASPO's generic proposal and pairwise-judge prompts (protocol 8.4), used for every dataset without its own
templates (optimizers/maspo/templates.py; MATH has its own). Their text is pinned: changing it changes the recorded
requests (and request seeds) of every such job.

Proposals: the reflection model at T 0.7 sees, per trace of its minibatch half, the problem (<= 2,000 chars), the
context the role read (upstream outputs), the role's own output (<= 4,500 chars), the team's score and feedback,
plus up to 5 misalignment cases mined from its predecessors; the template is role-aware (the role's place in the
graph, what it must hand on). The new instruction comes back in a ``` fenced block. The pairwise judge (T 0,
<= 1,024 tokens) carries `<judge_task>pairwise</judge_task>` and answers `Winner: A|B|TIE`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optimizers.reflective_dataset import head_tail

PROBLEM_CHARS = 2000
OUTPUT_CHARS = 4500
PROPOSAL_TEMPERATURE = 0.7


@dataclass(frozen=True)
class Trace:
    problem: str
    context: str
    output: str
    score: float | None
    feedback: str


def render_trace(i: int, t: Trace) -> str:
    return (f"# Trace {i}\n## Problem\n{head_tail(t.problem, PROBLEM_CHARS)}\n## Context this role read\n"
            f"{head_tail(t.context, OUTPUT_CHARS) or '(the task only)'}\n## This role's output\n"
            f"{head_tail(t.output, OUTPUT_CHARS) or '(none)'}\n## Team score\n{t.score}\n## Feedback\n{t.feedback}")


def proposal_prompt(role: str, position: str, terminal: bool, instruction: str, traces: Sequence[Trace],
                    misaligned: Sequence[str]) -> str:
    duty = ("It gives the team's final answer: make that answer correct and complete." if terminal else
            "Its output is not the final answer: make it the most useful input for the roles that read it.")
    cases = "\n\n".join(misaligned)
    upstream = (f"\n\nCases where upstream roles misled the team (mined from earlier roles):\n{cases}"
                if misaligned else "")
    shown = "\n\n".join(render_trace(i, t) for i, t in enumerate(traces, 1))
    return (f"You optimize the instruction of the role '{role}' in a multi-agent team. {position} {duty}\n"
            f"<current_instruction>\n{instruction}\n</current_instruction>\n\n{shown}{upstream}\n\n"
            f"Write an improved instruction for '{role}'. Provide the new instruction within ``` blocks.")


def pairwise_prompt(role: str, item_id: str, problem: str, response_a: str, response_b: str) -> str:
    return ("<judge_task>pairwise</judge_task>\nTwo versions of the same agent's output on the same task. Which one "
            f"is more valid and more useful for the team? (agent: '{role}')\nItem: {item_id}\n"
            f"<task>\n{head_tail(problem, PROBLEM_CHARS)}\n</task>\n"
            f"<response_a>\n{head_tail(response_a, OUTPUT_CHARS)}\n</response_a>\n"
            f"<response_b>\n{head_tail(response_b, OUTPUT_CHARS)}\n</response_b>\n"
            "Reply with one line: Winner: A, Winner: B or Winner: TIE")
