"""MIPRO's demo rendering and its grounded instruction-proposal prompt (protocol 8.2)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.models import Row
from optimizers.reflective_dataset import head_tail, task_text

DEMO_HEADING = "MIPROv2 Selected Demonstrations"
DEMO_STRING_CHARS = 1400
DEMO_DICT_KEYS = 12
DEMO_LIST_ITEMS = 6

# DSPy MIPROv2's proposer tips (dspy/propose/grounded_proposer.py).
TIPS = {
    "none": "",
    "creative": "Don't be afraid to be creative when creating the new instruction!",
    "simple": "Keep the instruction clear and concise.",
    "description": "Make sure your instruction is very informative and descriptive.",
    "high_stakes": "The instruction should include a high stakes scenario in which the LM must solve the task!",
    "persona": 'Include a persona that is relevant to the task in the instruction (ie. "You are a ...")',
}


def compact(value: Any) -> Any:
    """Strings <= 1,400 chars head+tail, dicts <= 12 keys, lists <= 6 items (recursively)."""
    if isinstance(value, str):
        return head_tail(value, DEMO_STRING_CHARS)
    if isinstance(value, dict):
        return {str(k): compact(v) for k, v in list(value.items())[:DEMO_DICT_KEYS]}
    if isinstance(value, (list, tuple)):
        return [compact(v) for v in list(value)[:DEMO_LIST_ITEMS]]
    return value


def render_role_prompt(instruction: str, demos: Sequence[dict[str, Any]]) -> str:
    """The role's instruction, then its demos under the MIPROv2 heading, one JSON block per demo."""
    if not demos:
        return instruction
    blocks = [f"```json\n{json.dumps(compact(d), sort_keys=True, ensure_ascii=False, indent=1)}\n```"
              for d in demos]
    return f"{instruction.rstrip()}\n\n{DEMO_HEADING}\n" + "\n".join(blocks)


def data_summary(train: Sequence[Row], n_bootstrapped: int, n_attempted: int) -> str:
    """A deterministic, data-aware summary of the training split (fields, size, sample inputs in batches of 10)."""
    fields = sorted({k for r in train for k in r.task})
    samples = [head_tail(task_text(r), 300) for r in train[:10][:3]]
    lines = [f"- {len(train)} training tasks; each task has the fields: {', '.join(fields) or '(none)'}.",
             f"- The current team solved {n_bootstrapped} of the {n_attempted} training tasks it attempted.",
             "- Sample task inputs:"]
    lines += [f"  {i}. {s}" for i, s in enumerate(samples, 1)]
    return "\n".join(lines)


def proposal_prompt(*, role: str, roles: Sequence[str], instruction: str, summary: str,
                    demos: Sequence[dict[str, Any]], tip: str, index: int) -> str:
    """Program-aware (team roles), data-aware (summary), demo-aware and tip-aware instruction proposal."""
    demo_text = "\n".join(json.dumps(compact(d), sort_keys=True, ensure_ascii=False) for d in demos) or "(none)"
    tip_text = TIPS[tip]
    return (
        f"You are proposing instruction #{index + 1} for the '{role}' agent of a multi-agent team with the roles: "
        f"{', '.join(roles)}.\n\n"
        f"The agent's current instruction:\n<current_instruction>\n{instruction}\n</current_instruction>\n\n"
        f"A summary of the dataset the team works on:\n{summary}\n\n"
        f"Examples of tasks the team solved correctly (input and final output):\n{demo_text}\n\n"
        + (f"Tip: {tip_text}\n\n" if tip_text else "")
        + f"Write a better instruction for the '{role}' agent, grounded in the data above. "
        "Provide the new instruction within ``` blocks."
    )
