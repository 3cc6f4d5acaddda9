"""MAPRO's model-facing prompts (protocol 8.3). Judge prompts carry a `<judge_task>` tag naming their kind
(node / edge / blame): the pointwise judge answers one line `Score: N` (N in 1..10), the blame judge `Blame: N`
(0..10). Rewrites put the current instruction between <current_instruction> tags and return the new one in a
``` fenced block (the GEPA convention, optimizers/reflective_dataset.py). "Demos on" (protocol 8.3;
optimizers/mapro/demos.py): a rewrite may also show the role's preference pair, its output on a successful run
between <preferred_output> tags and on a failed one between <rejected_output> tags, after the runs; the output caps
(init 1,024 tokens, mutation 512) are unchanged. Judge and probe prompts see pool instructions only, never demos."""

from __future__ import annotations

from collections.abc import Sequence

INIT_TOKENS = 1024      # init rewrite cap
MUTATION_TOKENS = 512   # blame-driven mutation cap
MUTATION_TEMPERATURE = 0.7


def rewrite_prompt(role: str, position: str, instruction: str, transcripts: Sequence[str], *, limit: int,
                   blamed: bool = False, preference: str | None = None) -> str:
    """`preference`: the rendered preference pair of the role (optimizers/mapro/demos.py), shown after the runs."""
    why = ("A judge blamed this role for the failures shown below." if blamed
           else "Write an alternative instruction for this role, grounded on the team runs shown below.")
    shown = "\n\n".join(f"# Run {i}\n{t}" for i, t in enumerate(transcripts, 1))
    pair = f"{preference}\n\n" if preference else ""
    return (f"You are improving one role of a multi-agent team. {position}\n"
            f"<current_instruction>\n{instruction}\n</current_instruction>\n\n{why}\n\n{shown}\n\n{pair}"
            f"Write a new instruction for '{role}' (at most {limit} tokens) that keeps its job within the team and "
            "fixes what went wrong. Provide the new instruction within ``` blocks.")


def node_judge_prompt(role: str, position: str, candidate: str, transcript: str, probe_output: str) -> str:
    return ("<judge_task>node</judge_task>\nRate the competence of one agent of a multi-agent team (1 = useless, "
            f"10 = excellent) for the run below. {position}\n"
            f"<candidate_prompt>\n{candidate}\n</candidate_prompt>\n"
            f"<probe_output>\n{probe_output}\n</probe_output>\n<transcript>\n{transcript}\n</transcript>\n"
            "Judge this candidate alone. Reply with one line: Score: N")


def edge_judge_prompt(sender: str, receiver: str, sender_prompt: str, receiver_prompt: str,
                      transcripts: Sequence[str]) -> str:
    shown = "\n".join(f"<transcript>\n{t}\n</transcript>" for t in transcripts)
    return ("<judge_task>edge</judge_task>\nRate how reliably two agents of a multi-agent team interact "
            f"('{sender}' hands its output to '{receiver}'; 1 = they work against each other, 10 = seamless) "
            "given their instructions and the runs below.\n"
            f"<sender_prompt>\n{sender_prompt}\n</sender_prompt>\n"
            f"<receiver_prompt>\n{receiver_prompt}\n</receiver_prompt>\n{shown}\n"
            "Reply with one line: Score: N")


def blame_prompt(role: str, position: str, instruction: str, transcript: str) -> str:
    return ("<judge_task>blame</judge_task>\nThe multi-agent run below ended badly. How much of the failure is due "
            f"to the role '{role}' (0 = none, 10 = entirely)? {position}\n"
            f"<role_prompt>\n{instruction}\n</role_prompt>\n<transcript>\n{transcript}\n</transcript>\n"
            "Reply with one line: Blame: N")
