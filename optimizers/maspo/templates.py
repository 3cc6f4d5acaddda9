"""MASPO's proposal and pairwise-judge templates, one set per dataset (protocol 8.4: "role-aware templates (MATH
uses upstream templates)").

A template set renders the reflection model's proposal prompt for one role and the task model's pairwise A/B
judge prompt for one judged output. `TEMPLATES` maps a dataset name (`Row.dataset`, the benchmark's own name) to its
set; a dataset without an entry gets `GENERIC`, which renders exactly today's prompts (optimizers/maspo/prompts.py:
`proposal_prompt`, `pairwise_prompt`), byte for byte, so the recorded requests of those jobs and their resume are
unchanged. A later dataset adds its own set by one registration in `TEMPLATES`.

Role-awareness: a role's `place` in the graph (optimizers/mapro/roles.py) is one of

    shared        the only prompt, run by every member (single, independent, decentralized); each reply is final
    terminal      the last stage of a pipeline (sequential): gives the team's final answer
    intermediate  an earlier stage: its output is read by the stages after it
    manager       the hub of a star (centralized): delegates, reads the workers' reports, gives the final answer
    worker        a spoke of a star: does what the manager hands it and reports back

MATH (`MATH_TEMPLATES`): this engine's rendering of the upstream MATH templates of the MASPO release
(github wangzx1219/MASPO, prompts.py: the MATH entries of PROMPT_OPTIMIZE_TEMPLATE, OPTIMIZATION_REQUIREMENTS,
INTERMEDIATE_COMPARE_TEMPLATE and FINAL_ANSWER_COMPARE_TEMPLATE; read, paraphrased, not copied). What they keep
from upstream: the proposer is told it optimizes one agent of a multi-agent mathematical reasoning system whose
core role must be preserved, and is shown the agent's role, a role description, sample traces (problem + context
+ agent output), a requirements block (role, responsibilities and input format kept; the final answer exactly once,
canonical, nothing else inside its delimiter) and the reference prompt, and is asked for an analysis, a one-
sentence modification and the complete prompt; an intermediate output is judged by whether it helps the system
reach the correct final answer (accurate reasoning, stated intermediate results, nothing misleading, enough
detail for downstream agents), a final answer by mathematical correctness alone (neither length nor formatting
wins over a correct answer). What this engine changes, and why:

* the answer delimiter is MATH's `\\boxed{...}` as its scorer reads it (the last `\\boxed{}` of the reply, Hendrycks
  equivalence; protocol 9 and 10), not upstream's `<answer>` tags; the requirement names the protected output
  contract the engine attaches outside the editable text (protocol 9) so the prompt agrees with it;
* role descriptions come from the role's place in the graph (the optimizer sees role names only), not from
  upstream's agent-type table; the downstream reader is named (upstream's successor note);
* the proposal carries the team score and feedback and the mined misalignment cases, as the generic template
  does (protocol 8.4), under the same caps (problem <= 2,000 chars, context and role output <= 4,500 chars);
* the proposal comes back in a ``` fenced block (the engine's convention, optimizers/reflective_dataset.py), not
  upstream's `<prompt>` tags, and the instruction sits between `<current_instruction>` tags, which the simulated
  reflection reads (engine/sim/policy.py);
* the judge prompt keeps the engine's `<judge_task>pairwise</judge_task>` tag, `Item:` line, `<response_a>` /
  `<response_b>` blocks and `Winner: A|B|TIE` reply (optimizers/maspo/reward.py, engine/sim/judge.py) instead of a
  bare `A`/`B`; an output of a role that answers (the terminal stage or the manager, judged as a successor's
  lookahead) is judged by the final-answer criteria, every other output by the intermediate criteria.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.models import Row
from optimizers.mapro.roles import RoleGraph
from optimizers.maspo.prompts import (OUTPUT_CHARS, PROBLEM_CHARS, Trace, pairwise_prompt, proposal_prompt,
                                      render_trace)
from optimizers.reflective_dataset import head_tail

ANSWERING_PLACES = frozenset({"shared", "terminal", "manager"})


@dataclass(frozen=True)
class Proposal:
    """What a proposal prompt is rendered from (one role, one minibatch half)."""

    role: str
    place: str
    position: str  # RoleGraph.describe(role)
    successor: str | None
    instruction: str
    traces: Sequence[Trace]
    misaligned: Sequence[str]


@dataclass(frozen=True)
class Judging:
    """What a pairwise judge prompt is rendered from (one judged role's two outputs on one item)."""

    role: str
    place: str
    item_id: str
    problem: str
    response_a: str
    response_b: str


@dataclass(frozen=True)
class Templates:
    name: str
    proposal: Callable[[Proposal], str]
    pairwise: Callable[[Judging], str]


def role_place(graph: RoleGraph, role: str) -> str:
    if graph.kind == "shared":
        return "shared"
    if graph.kind == "star":
        return "manager" if role == graph.terminal else "worker"
    return "terminal" if role == graph.terminal else "intermediate"


def task_of(rows: Sequence[Row]) -> str | None:
    """The dataset of a job's rows (each row names its benchmark); None when they are empty or mixed."""
    names = {r.dataset for r in rows}
    return names.pop() if len(names) == 1 else None


# ------------------------------------------------------------------ generic (today's prompts, unchanged)
GENERIC = Templates(
    "generic",
    lambda p: proposal_prompt(p.role, p.position, p.place in ANSWERING_PLACES, p.instruction, p.traces,
                              p.misaligned),
    lambda j: pairwise_prompt(j.role, j.item_id, j.problem, j.response_a, j.response_b),
)

# ------------------------------------------------------------------ MATH (the upstream templates, rendered here)
MATH_SYSTEM = "a multi-agent system that solves competition mathematics problems (MATH)"
MATH_ROLES = {
    "shared": "Solver: gives step-by-step mathematical reasoning and the final answer. Every member of the team runs "
              "this same prompt and each member's reply is read as a final answer (with several members, the team "
              "votes on them or debates them).",
    "terminal": "Final stage: reads the problem and every earlier stage's output, reconciles them, and gives the "
                "team's final answer.",
    "intermediate": "Intermediate stage: does its own part of the solution; the stages after it read its output and "
                    "build on it. It does not give the team's final answer.",
    "manager": "Manager: hands sub-tasks to the workers, reads their reports, and gives the team's final answer.",
    "worker": "Worker: carries out the sub-task the manager hands it and reports back; the manager reads its report "
              "and gives the final answer.",
}
MATH_KEEP = "Ensure the agent's role, responsibilities and input format remain consistent."
MATH_ANSWER = (
    "The agent must reason step by step and give exactly one final answer inside \\boxed{...}. MATH's scorer reads "
    "only the LAST \\boxed{} of the reply and compares its content with the gold answer by MATH equivalence; a "
    "reply without a boxed answer scores 0. Inside the box goes only the minimal, canonical answer in simplest "
    "exact form (reduced fractions, simplified radicals, multiples of \\pi), with no decimals, units, words or "
    "reasoning. The engine attaches a protected output contract to this agent outside the editable prompt (the "
    "\\boxed{} line first and last, at most 12 short reasoning lines between): the prompt must agree with it and "
    "never ask for another answer format.")
MATH_HAND_ON = (
    "The agent's output is not scored itself: it is the input of '{successor}'. It must contain mathematically "
    "accurate reasoning, state its intermediate results and assumptions explicitly (values in exact form), avoid "
    "misleading statements and ambiguous conclusions, and give enough detail for the agents downstream to verify "
    "it or build on it. It must not pass a guess off as the team's final answer.")
MATH_INTERMEDIATE_CRITERIA = (
    "Decide which output is more likely to help the system eventually produce the CORRECT final answer. Prefer the "
    "output that contains mathematically accurate reasoning (no factual or logical error), states intermediate "
    "results or assumptions clearly, avoids misleading statements or ambiguous conclusions, and gives enough "
    "detail for the agents downstream to verify or build on.")
MATH_FINAL_CRITERIA = (
    "These are two final answers. Decide only which one is more likely to be mathematically correct; the answer is "
    "the last \\boxed{...} of the output, as MATH's scorer reads it. Do not favour a longer, more detailed or better "
    "formatted output unless it is also correct: if one is clearly correct and the other wrong, choose the correct "
    "one even if its reasoning is minimal; an output without a boxed answer has no answer. If both seem plausible, "
    "prefer the one with clearer, error-free reasoning.")


def math_requirements(place: str, successor: str | None) -> str:
    if place in ANSWERING_PLACES:
        return f"{MATH_KEEP} {MATH_ANSWER}"
    return f"{MATH_KEEP} {MATH_HAND_ON.format(successor=successor or 'the next agent')}"


def math_proposal(p: Proposal) -> str:
    shown = "\n\n".join(render_trace(i, t) for i, t in enumerate(p.traces, 1))
    cases = "\n\n".join(p.misaligned)
    mined = (f"\n\nMisalignment cases (hard negatives): an earlier agent's output looked valid but misled the team "
             f"to a wrong final answer:\n{cases}" if p.misaligned else "")
    return (f"You are optimizing the prompt of one agent in {MATH_SYSTEM}.\n"
            "CRITICAL: the agent's core role and responsibilities MUST be preserved in the optimized prompt.\n\n"
            f"Agent role: '{p.role}'\nRole description: {MATH_ROLES[p.place]}\nPlace in the team: {p.position}\n\n"
            "Sample execution traces (problem + context the agent read + agent output + team score and feedback):"
            f"\n\n{shown}{mined}\n\nRequirements:\n{math_requirements(p.place, p.successor)}\n\n"
            f"Reference prompt:\n<current_instruction>\n{p.instruction}\n</current_instruction>\n\n"
            "Analyse what drawbacks the outputs produced with the reference prompt show and how to remove them, "
            "then give a one-sentence summary of the key modification, then the complete optimized prompt for "
            f"'{p.role}'. Provide the new instruction within ``` blocks.")


def math_pairwise(j: Judging) -> str:
    criteria = MATH_FINAL_CRITERIA if j.place in ANSWERING_PLACES else MATH_INTERMEDIATE_CRITERIA
    return ("<judge_task>pairwise</judge_task>\nYou are comparing two outputs of the agent "
            f"'{j.role}' of {MATH_SYSTEM} on the same problem. {MATH_ROLES[j.place]}\nItem: {j.item_id}\n"
            f"<task>\n{head_tail(j.problem, PROBLEM_CHARS)}\n</task>\n"
            f"<response_a>\n{head_tail(j.response_a, OUTPUT_CHARS)}\n</response_a>\n"
            f"<response_b>\n{head_tail(j.response_b, OUTPUT_CHARS)}\n</response_b>\n"
            f"{criteria}\nReply with one line: Winner: A, Winner: B or Winner: TIE")


MATH_TEMPLATES = Templates("math-upstream", math_proposal, math_pairwise)

TEMPLATES: dict[str, Templates] = {"math": MATH_TEMPLATES}


def templates_for(dataset: str | None) -> Templates:
    return TEMPLATES.get(dataset or "", GENERIC)
