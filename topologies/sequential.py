"""Sequential: a linear pipeline of n stages (protocol-v1 section 2.3).

Stage k's user message is its task template (from the team spec, with the rendered task in place of
`{question}`) followed by every earlier stage's output, in order, as "PRIOR STAGE: <role>" blocks (re-rendered
into the communication format). Stage k reads all earlier stages' nodes. Only the last stage carries the output
contract; its output is the answer. Stages with tools run a tool loop, the others are single chat calls.
"""

from __future__ import annotations

from typing import Any

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.contracts import ContractPolicy
from core.coalition import CoalitionGame
from core.models import AgentOutput, PromptBundle, Row
from core.topology import AgentContext
from topologies.coalition import SEQUENTIAL_RULE, acknowledge, mask_of, sequential_stages
from topologies.messages import editable, finish_output, react, system_prompt, tools_for
from topologies.teams import check_team_size, team_spec

PRIOR_STAGE = "PRIOR STAGE"


def stage_message(template_text: str, prior: list[tuple[str, str]]) -> str:
    blocks = [template_text.rstrip()]
    blocks += [f"{PRIOR_STAGE}: {role}\n{text}" for role, text in prior]
    return "\n\n".join(blocks)


class Sequential:
    name = "sequential"
    member_masks = True  # honours coalition masks (topologies/coalition.py)

    def __init__(self, team_size: int = 4, communication: str = "freeform", contract_version: int = 1):
        self.team_size = check_team_size(self.name, team_size)
        self.communication = communication
        self.policy = ContractPolicy(contract_version)
        CommunicationLog(communication)

    def roles(self, task: str, team_size: int) -> list[str]:
        return [stage.role for stage in team_spec(task).stages(team_size)]

    def coalition_game(self, task: str, team_size: int) -> CoalitionGame:
        return CoalitionGame(players=tuple(self.roles(task, team_size)))

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        spec = team_spec(bench.name)
        mask = mask_of(ctx)
        stages = sequential_stages(spec.stages(self.team_size), mask)
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        task = bench.render_task(row)
        native_tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        limit = spec.stage_step_limit()
        prior: list[tuple[str, str]] = []
        role_outputs: dict[str, str | None] = {}
        nodes: list[str] = []
        text: str | None = None
        step_limited: list[str] = []
        last_tool_result: str | None = None
        for index, stage in enumerate(stages):
            last = index == len(stages) - 1
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": system_prompt(editable(bundle, stage.role), answering=last,
                                                            bench=bench, comm=comm, role=stage.role,
                                                            policy=self.policy)},
                {"role": "user", "content": stage_message(stage.user_message(task), prior)},
            ]
            turn = await react(ctx, role=stage.role, member=0, messages=messages,
                               tools=native_tools if stage.tools else None, reads=tuple(nodes),
                               max_steps=limit if stage.tools and native_tools else 1)
            comm.report(f"{stage.role}.0", turn.text)
            if turn.stop:
                step_limited.append(stage.role)
            text = turn.text
            role_outputs[stage.role] = turn.text
            nodes.append(turn.node_id)
            if turn.last_tool_result is not None:
                last_tool_result = turn.last_tool_result
            if not last:
                prior.append((stage.role, comm.handoff(stage.role, turn.text)))
        metadata: dict[str, Any] = {"team_size": self.team_size, "stages": [s.role for s in stages],
                                    **comm.metadata(), "role_outputs": role_outputs}
        if step_limited:
            metadata["step_limit_stages"] = step_limited
        if last_tool_result is not None:
            metadata["last_tool_result"] = last_tool_result
        output = AgentOutput(text=text, selected_member=0, metadata=metadata)
        return acknowledge(await finish_output(bench, row, ctx, output), mask, tuple(s.role for s in stages),
                           SEQUENTIAL_RULE)
