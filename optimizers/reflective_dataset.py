"""What a reflection model is shown, and how its proposal is read back (shared by reflective methods).

A reflective example is one scored rollout: the row's public task (never gold labels), the team's generated output
(final answer text <= 1,200 chars head+tail, final tool calls, winner/vote summary when the topology reports one)
and the scorer's feedback text. Proposals are taken from the LAST ``` fenced block of the reply (the GEPA
convention); a reply without one yields no proposal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from core.models import RolloutRecord, Row

OUTPUT_CHARS = 1200
INPUT_CHARS = 7000
_FENCE_RE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def head_tail(text: str, limit: int) -> str:
    """`text` cut to `limit` chars, keeping its head and tail around an elision marker."""
    if len(text) <= limit:
        return text
    marker = "\n[...]\n"
    half = max(1, (limit - len(marker)) // 2)
    return f"{text[:half]}{marker}{text[-half:]}"


def last_fenced_block(reply: str) -> str | None:
    """The content of the last ``` fenced block, stripped; None when there is none or it is empty."""
    blocks = _FENCE_RE.findall(reply or "")
    if not blocks:
        return None
    text = blocks[-1].strip()
    return text or None


def task_text(row: Row) -> str:
    """The public task of a row as the model-facing text (a single string field verbatim, else canonical JSON)."""
    if len(row.task) == 1:
        (value,) = row.task.values()
        if isinstance(value, str):
            return head_tail(value, INPUT_CHARS)
    return head_tail(json.dumps(row.task, sort_keys=True, ensure_ascii=False, default=str), INPUT_CHARS)


def output_text(record: RolloutRecord) -> str:
    out = record.final_output
    if out is None:
        return f"(no output: {record.error or record.status.value})"
    parts = []
    if out.text:
        parts.append(head_tail(out.text, OUTPUT_CHARS))
    if out.tool_calls:
        parts.append("tool calls: " + head_tail(json.dumps(list(out.tool_calls), sort_keys=True, default=str),
                                                OUTPUT_CHARS))
    summary = {k: out.metadata[k] for k in ("winner", "votes", "vote_summary") if k in out.metadata}
    if summary:
        parts.append("team summary: " + json.dumps(summary, sort_keys=True, default=str))
    return "\n".join(parts) or "(empty output)"


def reflective_examples(rows: Sequence[Row], records: Sequence[RolloutRecord]) -> list[dict[str, Any]]:
    """One example per usable scored record (budget-exhausted and infrastructure rows carry no signal)."""
    by_id = {r.id: r for r in rows}
    examples = []
    for rec in records:
        if not rec.usable or rec.example_id not in by_id:
            continue
        examples.append({"inputs": task_text(by_id[rec.example_id]), "generated_outputs": output_text(rec),
                         "score": rec.score, "feedback": rec.feedback or ""})
    return examples


def render_examples(examples: Sequence[dict[str, Any]]) -> str:
    chunks = []
    for i, ex in enumerate(examples, 1):
        chunks.append(f"# Example {i}\n## Inputs\n{ex['inputs']}\n\n## Generated Outputs\n{ex['generated_outputs']}"
                      f"\n\n## Score\n{ex['score']}\n\n## Feedback\n{ex['feedback']}")
    return "\n\n".join(chunks)


def mutation_prompt(role: str, instruction: str, examples: Sequence[dict[str, Any]]) -> str:
    """GEPA's instruction-proposal prompt for one role of a multi-agent team."""
    return (
        f"I provided the '{role}' agent of a multi-agent team with the following instructions to perform a task "
        "for me:\n"
        f"<current_instruction>\n{instruction}\n</current_instruction>\n\n"
        "The following are examples of different task inputs provided to the team, along with the team's final "
        "response for each of them and some feedback on how the response could be better:\n\n"
        f"{render_examples(examples)}\n\n"
        f"Your task is to write a new instruction for the '{role}' agent.\n\n"
        "Read the inputs carefully and identify the input style and the task. Read all the responses and the "
        "corresponding feedback. Identify all niche and domain-specific factual information about the task and "
        "include it in the instruction, as it may not be available to the agent in the future. If the agent "
        "used a generalizable strategy to solve the task, include that strategy in the instruction as well.\n\n"
        "Provide the new instruction within ``` blocks."
    )
