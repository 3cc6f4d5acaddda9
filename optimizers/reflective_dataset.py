"""What a reflection model is shown, and how its proposal is read back (shared by reflective methods).

A reflective example is one scored rollout, as protocol-v1 section 8.1 lists it: the row's public task (never gold
labels; LCB inputs compacted: problem 7,000 chars head+tail, starter code 3,000, hidden tests replaced by a
count), the generated outputs (the team's final answer, its final tool calls, the vote summary when the topology
voted, and <= 1,200 chars head+tail of the reflected role's own output) and the scorer's feedback text. Proposals are taken from the LAST ``` fenced block of the reply (the GEPA
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
STARTER_CHARS = 3000
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


def lcb_task_text(row: Row) -> str:
    """Section 8.1's LCB compaction: problem head+tail 7,000 chars, starter code 3,000, hidden tests as a count."""
    task = row.task
    hidden = row.gold.get("private_tests") if isinstance(row.gold, dict) else None
    parts = [f"title: {task.get('question_title', '')}", f"mode: {task.get('mode', '')}",
             "problem:\n" + head_tail(str(task.get("question_content", "")), INPUT_CHARS)]
    if task.get("starter_code"):
        parts.append("starter code:\n" + head_tail(str(task["starter_code"]), STARTER_CHARS))
    parts.append(f"hidden tests: {len(hidden) if isinstance(hidden, list) else 0} (not shown)")
    return "\n".join(parts)


def task_text(row: Row) -> str:
    """The public task of a row as the model-facing text (a single string field verbatim, else canonical JSON)."""
    if row.dataset == "lcb":
        return lcb_task_text(row)
    if len(row.task) == 1:
        (value,) = row.task.values()
        if isinstance(value, str):
            return head_tail(value, INPUT_CHARS)
    return head_tail(json.dumps(row.task, sort_keys=True, ensure_ascii=False, default=str), INPUT_CHARS)


def vote_text(vote: dict[str, Any]) -> str:
    """The topology's vote record (core.voting.VoteResult.summary) as one line."""
    buckets = "; ".join(f"{b.get('key')!r}: members {b.get('members')}" for b in vote.get("buckets", []))
    return (f"vote summary: winner {vote.get('winner_key')!r} (member {vote.get('selected_member')} selected of "
            f"{vote.get('n_members')}); buckets {buckets or 'none'}; abstained {vote.get('abstentions', [])}"
            + ("; tie broken by lowest member" if vote.get("tie") else ""))


def output_text(record: RolloutRecord, role: str | None = None) -> str:
    out = record.final_output
    if out is None:
        return f"(no output: {record.error or record.status.value})"
    parts = []
    if out.text:
        parts.append("final answer:\n" + head_tail(out.text, OUTPUT_CHARS))
    if out.tool_calls:
        parts.append("tool calls: " + head_tail(json.dumps(list(out.tool_calls), sort_keys=True, default=str),
                                                OUTPUT_CHARS))
    vote = out.metadata.get("vote")
    if isinstance(vote, dict):
        parts.append(vote_text(vote))
    own = out.metadata.get("role_outputs", {})
    if role is not None and isinstance(own, dict) and role in own:
        parts.append(f"output of the '{role}' agent:\n" + head_tail(str(own[role] or "(empty)"), OUTPUT_CHARS))
    return "\n".join(parts) or "(empty output)"


def reflective_examples(rows: Sequence[Row], records: Sequence[RolloutRecord],
                        role: str | None = None) -> list[dict[str, Any]]:
    """One example per usable scored record (budget-exhausted and infrastructure rows carry no signal); with
    `role`, the examples show that role's own output."""
    by_id = {r.id: r for r in rows}
    examples = []
    for rec in records:
        if not rec.usable or rec.example_id not in by_id:
            continue
        examples.append({"inputs": task_text(by_id[rec.example_id]), "generated_outputs": output_text(rec, role),
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
