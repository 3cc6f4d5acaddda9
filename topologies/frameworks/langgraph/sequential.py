"""Sequential on LangGraph: a StateGraph of n stage nodes in a line (protocol-v1 section 2.3).

Mirrors topologies/sequential.py: stage k's user message is its team-spec template followed by every earlier
stage's output as "PRIOR STAGE: <role>" blocks (`topologies.sequential.stage_message`, re-rendered into the
communication format), its first model call reads all earlier stages' last nodes, only the last stage carries the
output contract and its output is the answer. A stage with tools is a ReAct graph, the others one model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.topology import AgentContext
from core.models import AgentOutput, PromptBundle, Row
from topologies.frameworks.langgraph.agent import FRAMEWORK, Team, episode_of, open_team, react, start_messages
from topologies.messages import editable, finish_output, system_prompt, tools_for
from topologies.sequential import Sequential, stage_message
from topologies.teams import Stage, team_spec


class PipelineState(TypedDict):
    prior: list[tuple[str, str]]  # (role, re-rendered output) of the stages so far
    nodes: list[str]  # each finished stage's last node
    role_outputs: dict[str, str | None]
    text: str | None
    step_limited: list[str]
    last_tool_result: str | None


@cache
def pipeline_graph(names: tuple[str, ...]) -> Any:
    """The stage nodes in a line, compiled once per stage list; each run's `Pipeline` comes with its config."""
    graph = StateGraph(PipelineState)
    for index, name in enumerate(names):
        graph.add_node(name, _stage_node(index))
    for a, b in zip([START, *names], [*names, END]):
        graph.add_edge(a, b)
    return graph.compile()


def _stage_node(index: int) -> Any:
    async def run_stage(state: PipelineState, config: RunnableConfig) -> dict[str, Any]:
        pipeline: Pipeline = episode_of(config)["pipeline"]
        return await pipeline.stage(index, state)

    return run_stage


class LangGraphSequential(Sequential):
    name = "sequential"
    framework = FRAMEWORK

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        stages = team_spec(bench.name).stages(self.team_size)
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        async with open_team(ctx) as team:
            pipeline = Pipeline(self, team, row, bundle, bench, comm, stages)
            graph = pipeline_graph(tuple(f"stage_{i}_{s.role}" for i, s in enumerate(stages)))
            state = await graph.ainvoke(
                {"prior": [], "nodes": [], "role_outputs": {}, "text": None, "step_limited": [],
                 "last_tool_result": None},
                config={"recursion_limit": len(stages) + 2, "configurable": {"pipeline": pipeline}})
        metadata: dict[str, Any] = {"team_size": self.team_size, "stages": [s.role for s in stages],
                                    **comm.metadata(), "role_outputs": state["role_outputs"]}
        if state["step_limited"]:
            metadata["step_limit_stages"] = state["step_limited"]
        if state["last_tool_result"] is not None:
            metadata["last_tool_result"] = state["last_tool_result"]
        output = AgentOutput(text=state["text"], selected_member=0, metadata=metadata)
        return await finish_output(bench, row, ctx, output)


@dataclass
class Pipeline:
    """One rollout's stages (the run configuration of the shared pipeline graph)."""

    topology: LangGraphSequential
    team: Team
    row: Row
    bundle: PromptBundle
    bench: Benchmark
    comm: CommunicationLog
    stages: tuple[Stage, ...]

    async def stage(self, index: int, state: PipelineState) -> dict[str, Any]:
        bench, comm, stage, row = self.bench, self.comm, self.stages[index], self.row
        last = index == len(self.stages) - 1
        native_tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.topology.name)
        limit = team_spec(bench.name).stage_step_limit()
        system = system_prompt(editable(self.bundle, stage.role), answering=last, bench=bench, comm=comm,
                               role=stage.role, policy=self.topology.policy)
        user = stage_message(stage.user_message(bench.render_task(row)), state["prior"])
        turn, _ = await react(self.team, role=stage.role, member=0, messages=start_messages(system, user),
                              tools=native_tools if stage.tools and native_tools else None,
                              reads=tuple(state["nodes"]), max_steps=limit if stage.tools and native_tools else 1)
        comm.report(f"{stage.role}.0", turn.text)
        update: dict[str, Any] = {"nodes": [*state["nodes"], turn.node_id], "text": turn.text,
                                  "role_outputs": {**state["role_outputs"], stage.role: turn.text}}
        if turn.stop:
            update["step_limited"] = [*state["step_limited"], stage.role]
        if turn.last_tool_result is not None:
            update["last_tool_result"] = turn.last_tool_result
        if not last:
            update["prior"] = [*state["prior"], (stage.role, comm.handoff(stage.role, turn.text))]
        return update
