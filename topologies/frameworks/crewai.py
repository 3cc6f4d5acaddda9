"""Sequential on CrewAI (protocol-v1 section 2.3, registry key `sequential_crewai`).

One crewai `Agent` per stage, whose backstory is the system prompt the native sequential topology builds for that
stage (the bundle's editable prompt; the last stage's wrapped with the output contract); one `Task` per stage whose
description is the stage's task template with the rendered task, and whose `context` lists every earlier task, so
CrewAI itself appends the earlier stages' outputs; `Process.sequential`. Every agent's model is CrewAI's native
OpenAI provider (what `LLM("openai/<model>")` builds; subclassed only to share one TLS context) on the agent's own
route of the engine's recording gateway (retries off), so each call is a recorded, seeded turn of that stage's
role; the first call of stage k reads the last node of every earlier stage. A stage without tools gets one model
call (max_iter 1), a stage with tools the dataset's sequential step limit, as in the native topology.
Stages with tools get the dataset's tools as CrewAI tools carrying the dataset's JSON schema; CrewAI runs them in
threads of its own and they execute through the gateway on the job's event loop (topologies/frameworks/crewai_parts.py).
The crew is built and run in a worker thread; the gateway links are created before, on the event loop.

What CrewAI adds to the prompts (its role/goal framing, the "expected criteria" line, the context block, its
tool-use instructions) is its framework behaviour and is recorded as sent. The answer and each stage's output are
read from the gateway's record of the model's replies, not from CrewAI's objects.

CrewAI contacts nothing but the gateway: telemetry, tracking and tracing are switched off before crewai is imported
(topologies/frameworks/crewai_parts.py; each Crew is also built with `tracing=False`), memory, planning, caching and
delegation are off, the native OpenAI provider is used (no LiteLLM, no model-cost lookups), and CrewAI's kickoff
log stays in memory instead of a shared SQLite file under the user's data directory.

Still built per rollout (issue 31 item 1; bench/frameworks.py measured ~43-51 ms of engine CPU per model call
under load, native ~1.5): the Crew, its Agents, Tasks and LLMs, because CrewAI keeps a run's state on them (each
Task's output and the context the later tasks read, each Agent's executor and tools handler, the Crew's kickoff
log), so one object cannot serve two concurrent rollouts. Those are pydantic models validated on construction,
plus CrewAI's sync kickoff in a worker thread and its event bus. Reusing them would mean resetting CrewAI's
private state between runs and serializing the rollouts. The per-call HTTP path (the OpenAI SDK's sync client) has
not been changed yet. How much of the cost is construction and how much is kickoff was not measured separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from topologies.frameworks.crewai_parts import (RecordedCrew, close_clients, crew_llm, crew_tools,  # first: CrewAI's
                                     kickoff)  # telemetry and tracing are switched off before crewai loads
from crewai import Agent, Process, Task
from crewai.agents.agent_builder.base_agent import BaseAgent

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.framework import AgentLink, GatewaySession, open_gateway
from core.topology import AgentContext
from core.models import AgentOutput, PromptBundle, Row
from topologies.messages import editable, finish_output, system_prompt, tools_for
from topologies.teams import team_spec
from topologies.sequential import Sequential

FRAMEWORK = "crewai"
STAGE_GOAL = "Carry out the {role} stage of the team's task."
STAGE_OUTPUT = "The complete output of the {role} stage, for the stages after it."
FINAL_OUTPUT = "The team's final answer, in the format your instructions require."


def last_nodes(gateway: GatewaySession, roles: Sequence[str]) -> tuple[str, ...]:
    """The last recorded node of each earlier stage (what stage k's first call reads)."""
    return tuple(nodes[-1] for nodes in (gateway.nodes(r, 0) for r in roles) if nodes)


def final_texts(gateway: GatewaySession, roles: Sequence[str]) -> dict[str, str | None]:
    """Each stage's output: the content of its role's last recorded model call (None when it made none)."""
    texts: dict[str, str | None] = {role: None for role in roles}
    for call in gateway.calls():
        if call.role in texts and call.member == 0:
            texts[call.role] = call.content
    return texts


class CrewSequential(Sequential):
    name = "sequential"
    framework = FRAMEWORK
    # sampling options a CrewAI user sets on the LLM (none by default); the gateway sends the protocol's decoding
    # instead and records these as the call's `framework_params`
    llm_options: ClassVar[dict[str, Any]] = {}

    def _crew(self, gw: GatewaySession, links: Sequence[AgentLink], token: Any, row: Row, bundle: PromptBundle,
              bench: Benchmark, comm: CommunicationLog, tool_errors: list[BaseException]) -> RecordedCrew:
        """The crew for one rollout attempt on the given gateway links (built in the worker thread: a few ms of
        pydantic validation the event loop need not wait for)."""
        spec = team_spec(bench.name)
        stages = spec.stages(self.team_size)
        task_text = bench.render_task(row)
        native_tools = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        tasks: list[Task] = []
        agents: list[BaseAgent] = []
        for index, (stage, link) in enumerate(zip(stages, links)):
            last = index == len(stages) - 1
            tools = crew_tools(gw, stage.role, native_tools, tool_errors, token) if stage.tools else []
            backstory = system_prompt(editable(bundle, stage.role), answering=last, bench=bench, comm=comm,
                                      role=stage.role, policy=self.policy)
            agent = Agent(role=stage.role, goal=STAGE_GOAL.format(role=stage.role), backstory=backstory,
                          llm=crew_llm(link, self.llm_options), tools=tools, allow_delegation=False, verbose=False,
                          cache=False, max_iter=spec.stage_step_limit() if tools else 1, max_retry_limit=0,
                          respect_context_window=False)
            expected = FINAL_OUTPUT if last else STAGE_OUTPUT.format(role=stage.role)
            tasks.append(Task(description=stage.user_message(task_text), expected_output=expected, agent=agent,
                              context=list(tasks)))
            agents.append(agent)
        return RecordedCrew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False, memory=False,
                            cache=False, planning=False, tracing=False)

    def _kickoff(self, *args: Any) -> None:
        """Build the crew and run it (in the worker thread), then close its HTTP clients."""
        crew = self._crew(*args)
        try:
            kickoff(crew)
        finally:
            close_clients(crew)

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        stages = [s.role for s in team_spec(bench.name).stages(self.team_size)]
        tool_errors: list[BaseException] = []
        stopped: dict[str, str] | None = None
        async with open_gateway(ctx, FRAMEWORK) as gw:
            links = [gw.agent(role, 0, reads=partial(last_nodes, gw, stages[:index]))
                     for index, role in enumerate(stages)]  # stage k's first call reads every earlier stage
            token = anyio.lowlevel.current_token()
            try:
                await anyio.to_thread.run_sync(self._kickoff, gw, links, token, row, bundle, bench, comm,
                                               tool_errors)
            except Exception as exc:
                stopped = empty_answer_stop(gw, exc)
                if stopped is None or tool_errors:
                    raise
            if tool_errors:
                raise tool_errors[0]
            outputs = final_texts(gw, stages)
            calls = gw.calls()
        if stopped is not None and stopped["stage"] != stages[-1]:
            outputs[stages[-1]] = None  # the crew stopped before the answering stage
        for role in stages:
            comm.report(f"{role}.0", outputs[role])
        metadata: dict[str, Any] = {"team_size": self.team_size, "stages": stages, "framework": FRAMEWORK,
                                    **comm.metadata(), "role_outputs": outputs,
                                    "calls_per_stage": {r: sum(1 for c in calls if c.role == r) for r in stages}}
        if stopped is not None:
            metadata["framework_stopped"] = stopped
        output = AgentOutput(text=outputs[stages[-1]], selected_member=0, metadata=metadata)
        return await finish_output(bench, row, ctx, output)


def empty_answer_stop(gateway: GatewaySession, exc: Exception) -> dict[str, str] | None:
    """CrewAI raises on a reply with empty content and no tool calls. That reply is an observed, malformed answer
    (protocol 5.3: a usable rollout scored 0, never an infrastructure failure to retry with the same seed): the
    crew stopped at that stage. Anything else is not this case (None)."""
    calls = gateway.calls()
    if not calls or not isinstance(exc, ValueError):
        return None
    last = calls[-1]
    if (last.content or "").strip() or last.tool_calls:
        return None
    return {"stage": last.role, "node_id": last.node_id, "error": f"{type(exc).__name__}: {exc}"}


RUNTIMES: dict[str, type] = {"sequential": CrewSequential}
