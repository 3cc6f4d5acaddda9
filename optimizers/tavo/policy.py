"""TAVO's meta-knowledge and its verbalized policy (protocol 8.8), as prompts to the reflection model and as the
bundle they produce. Pure: texts in, texts out.

- meta-knowledge (`tavo.meta_knowledge`): the round's credit-ranked (example, role) cases, per role the most
  blamed failures and the best-credited success, aggregated into one running list of lessons (the previous
  round's meta-knowledge is the current instruction it extends);
- `truce-release` (default): ONE shared verbalized-policy overlay (`tavo.overlay`) written from the meta-knowledge
  and the failures' feedback, appended to EVERY role prompt under OVERLAY_HEADER (the seed prompt stays intact);
- `tavo-paper-reproduction`: each role's previous prompt refined on its own cases (`tavo.refine`), no overlay;
- `tavo-hybrid`: both: each role refined on its own cases, then the shared overlay appended.
Replies are read from the last fenced block (as the other methods); no block = no change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from optimizers.reflective_dataset import task_text
from optimizers.tavo.credit import Case

MODES = ("truce-release", "tavo-paper-reproduction", "tavo-hybrid")
DEFAULT_MODE = "truce-release"
OVERLAY_HEADER = "## Shared verbalized policy (TAVO)"
REFLECTION_TEMPERATURE = 0.5  # protocol 8.8: default temperature 0.5
CASES_PER_ROLE = 3  # the 2 most blamed failures and the best-credited success of each role
TASK_CHARS, STEP_CHARS = 1_500, 1_200


def uses_overlay(mode: str) -> bool:
    return mode in ("truce-release", "tavo-hybrid")


def refines_roles(mode: str) -> bool:
    return mode in ("tavo-paper-reproduction", "tavo-hybrid")


def ranked(cases: Sequence[Case], role: str) -> list[Case]:
    """A role's cases shown to the reflection model: the lowest-credit failures (2), then the highest-credit
    success (1); earliest first among equals."""
    mine = [(i, c) for i, c in enumerate(cases) if c.role == role]
    failed = sorted((t for t in mine if t[1].reward < 1.0), key=lambda t: (t[1].credit, t[0]))[:2]
    solved = sorted((t for t in mine if t[1].reward >= 1.0), key=lambda t: (-t[1].credit, t[0]))[:1]
    return [c for _, c in failed + solved][:CASES_PER_ROLE]


def render_case(case: Case) -> str:
    steps = "\n".join(f"- step {s.segment.index + 1} (progress {s.scores[0]}, coordination {s.scores[1]}, stage "
                      f"{s.scores[2]}):\n{s.segment.render()[:STEP_CHARS]}" for s in case.steps)
    return (f"### Example {case.row.id}, role '{case.role}': team {'solved' if case.reward >= 1.0 else 'failed'}, "
            f"credit {case.credit:+.2f}\nTask: {task_text(case.row)[:TASK_CHARS]}\n{steps}\n"
            f"## Feedback\n{case.feedback}\n")


def meta_knowledge_prompt(previous: str, cases: Sequence[Case], roles: Sequence[str]) -> str:
    shown = "\n".join(render_case(c) for role in roles for c in ranked(cases, role))
    credit = "\n".join(f"- {role}: mean credit {_mean([c.credit for c in cases if c.role == role]):+.2f}"
                       for role in roles if any(c.role == role for c in cases))
    return ("You analyse a multi-agent team's trajectories. Each step was rated by a judge; each (example, role) "
            "has a trajectory-aware credit (negative: that role's steps carried the failure). Extend the team's "
            "meta-knowledge: general, reusable lessons on what the roles must do differently (no example-specific "
            "answers). Return the full updated list in one fenced block.\n"
            f"<current_instruction>\n{previous}\n</current_instruction>\n## Credit per role\n{credit}\n"
            f"## Cases\n{shown}")


def overlay_prompt(overlay: str, meta_knowledge: str, cases: Sequence[Case], roles: Sequence[str]) -> str:
    failures = "\n".join(f"- {c.row.id} ({c.role}): {c.feedback[:600]}" for role in roles
                         for c in ranked(cases, role) if c.reward < 1.0)
    return ("Write ONE shared verbalized policy for every agent of a multi-agent team: short imperative rules that "
            "turn the meta-knowledge below into behaviour. It is appended to every agent's own prompt. Revise the "
            "current policy; return the full policy in one fenced block.\n"
            f"<current_instruction>\n{overlay}\n</current_instruction>\n## Meta-knowledge\n{meta_knowledge}\n"
            f"## Failures this round\n## Feedback\n{failures}\n")


def refine_prompt(role: str, prompt: str, meta_knowledge: str, cases: Sequence[Case]) -> str:
    shown = "\n".join(render_case(c) for c in ranked(cases, role))
    return (f"Refine the system prompt of the '{role}' agent of a multi-agent team from its credited cases and the "
            "team's meta-knowledge. Keep its interface (tools, roles, output format). Return the full prompt in one "
            f"fenced block.\n<current_instruction>\n{prompt}\n</current_instruction>\n## Meta-knowledge\n"
            f"{meta_knowledge}\n## Cases\n{shown}")


def with_overlay(prompts: Mapping[str, str], overlay: str) -> dict[str, str]:
    """Every role prompt with the shared overlay appended (none when the overlay is empty)."""
    if not overlay.strip():
        return dict(prompts)
    return {r: f"{p.rstrip()}\n\n{OVERLAY_HEADER}\n{overlay.strip()}" for r, p in prompts.items()}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0
