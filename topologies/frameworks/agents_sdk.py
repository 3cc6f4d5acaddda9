"""Decentralized on the OpenAI Agents SDK (protocol-v1 section 2.5, registry key `decentralized_openai_agents`).

n peers share the `debater` prompt (the system prompt the native decentralized topology builds, as the SDK agent's
instructions). Each peer turn is one SDK run (`agents.Runner.run`) of that peer's own `agents.Agent`, whose model is
an `OpenAIChatCompletionsModel` over an `AsyncOpenAI` client on the peer's route of the engine's recording gateway
(retries off; the gateway seeds each request per (rollout, role, peer, turn) and enforces the protocol's decoding).
The dataset's tools are `FunctionTool`s with the dataset's JSON schema, executed through the gateway; there are no
handoffs. Round 0: the input is the task. Round r >= 1: the task, the peer's own round r-1 answer (as its assistant
message) and the other peers' round r-1 answers (one user message, the native `peers_message`); the peer's first
call of the round reads the other peers' round r-1 nodes. A run that reaches its turn limit ends that peer's turn
with its last reply (the native step limit). After the last round the SDK runners' vote: the whole final output,
whitespace-normalized, under the shared vote rule (largest bucket, ties to the lowest peer, all-abstain peer 0).

The SDK sends no `repetition_penalty`; the gateway replaces whatever decoding a framework sends with the protocol's,
which includes it, so these requests carry it like every other (recorded; the SDK's own parameters are kept in
the call's `framework_params`). Tracing is disabled: the SDK exports nothing.

Built once, routed per call: the OpenAI client (and its loopback HTTP client) is the gateway's, shared by every
rollout (topologies/frameworks/loopback.py `shared_openai`: no typed request transform, aiohttp underneath); each peer's
model talks through `routed(link)`, a view of it carrying the peer's route. What a rollout still creates: one
`agents.Agent` per peer (its instructions are the rollout's prompt and its tools the row's; ~0.4 ms each), an
`OpenAIChatCompletionsModel` and a routed client view per peer (~0.02 ms), the row's `FunctionTool`s, and what
`Runner.run` builds on every run (its run state, items and usage objects).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, ClassVar

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

from agents import (Agent, FunctionTool, MaxTurnsExceeded, ModelSettings, OpenAIChatCompletionsModel,  # noqa: E402
                    Runner, set_tracing_disabled)
from agents.tool_context import ToolContext  # noqa: E402

from core.benchmark import Benchmark, rerenders_handoffs  # noqa: E402
from core.communication import CommunicationLog  # noqa: E402
from core.framework import GatewaySession, open_gateway  # noqa: E402
from core.topology import AgentContext  # noqa: E402
from core.models import AgentOutput, PromptBundle, Row  # noqa: E402
from core.voting import majority_vote  # noqa: E402
from topologies.frameworks.loopback import shared_openai  # noqa: E402
from topologies.decentralized import Decentralized, peers_message  # noqa: E402
from topologies.members import run_members  # noqa: E402
from topologies.messages import editable, finish_output, system_prompt, tools_for  # noqa: E402
from topologies.teams import team_spec  # noqa: E402

set_tracing_disabled(True)

FRAMEWORK = "openai_agents"


def sdk_vote_key(text: str | None) -> str | None:
    """The SDK runners' vote key: the whole final output, whitespace-normalized (blank abstains)."""
    key = " ".join((text or "").split())
    return key or None


def sdk_tools(gateway: GatewaySession, role: str, member: int,
              schemas: Sequence[dict[str, Any]]) -> list[FunctionTool]:
    """The dataset's tools as SDK function tools (the dataset's JSON schema as given), run through the gateway."""
    tools = []
    for schema in schemas:
        function = schema["function"]
        name = function["name"]

        async def invoke(context: ToolContext[Any], arguments: str, name: str = name) -> str:
            try:
                parsed: Any = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError:
                parsed = arguments  # the benchmark's tool reports malformed arguments to the model
            return await gateway.call_tool(role, member, name, parsed, context.tool_call_id)

        tools.append(FunctionTool(name=name, description=function.get("description") or name,
                                  params_json_schema=dict(function.get("parameters") or {"type": "object"}),
                                  on_invoke_tool=invoke, strict_json_schema=False))
    return tools


def last_content(gateway: GatewaySession, role: str, member: int) -> str | None:
    """The content of a peer's latest recorded model call."""
    content = None
    for call in gateway.calls():
        if call.role == role and call.member == member:
            content = call.content
    return content


class SdkDecentralized(Decentralized):
    name = "decentralized"
    framework = FRAMEWORK
    # the SDK agents' model settings (the SDK's defaults unless set); the gateway sends the protocol's decoding
    # instead and records what the SDK asked as the call's `framework_params`
    model_settings: ClassVar[ModelSettings] = ModelSettings()

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        spec = team_spec(bench.name)
        role = spec.debater_role()
        rounds = self.rounds if self.rounds is not None else spec.rounds()
        n = self.team_size
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        system = system_prompt(editable(bundle, role), answering=True, bench=bench, comm=comm, role=role,
                               policy=self.policy)
        task = bench.render_task(row)
        schemas = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        max_turns = spec.debate_step_limit() if schemas else 1
        step_limited: set[int] = set()
        async with open_gateway(ctx, FRAMEWORK) as gw:
            agents: list[Agent[Any]] = []
            for member in range(n):
                link = gw.agent(role, member)
                client = shared_openai(gw, link).routed(link)  # the gateway's one client, this peer's route
                agents.append(Agent(name=f"{role}_{member}", instructions=system,
                                    model=OpenAIChatCompletionsModel(model=link.model, openai_client=client),
                                    tools=list(sdk_tools(gw, role, member, schemas)),
                                    model_settings=self.model_settings))
            answers = await self._debate(gw, agents, role, task, rounds, max_turns, comm, step_limited)
        outputs = [await finish_output(bench, row, ctx, AgentOutput(text=text, selected_member=m))
                   for m, text in enumerate(answers)]
        vote = majority_vote([sdk_vote_key(o.text) for o in outputs])
        chosen = outputs[vote.selected]
        metadata: dict[str, Any] = {"team_size": n, "rounds": rounds, "framework": FRAMEWORK,
                                    "vote": {**vote.summary(), "key": "whole_output_whitespace_normalized"},
                                    **comm.metadata(), "role_outputs": {role: chosen.text}}
        if step_limited:
            metadata["step_limit_peers"] = sorted(step_limited)
        return chosen.model_copy(update={"metadata": {**chosen.metadata, **metadata}})

    async def _debate(self, gw: GatewaySession, agents: list[Agent[Any]], role: str, task: str, rounds: int,
                      max_turns: int, comm: CommunicationLog, step_limited: set[int]) -> list[str | None]:
        """Every round's peer turns (concurrent within a round: each reads only the previous round); the last
        round's answers in peer order."""
        n = len(agents)
        previous: list[str | None] = []
        previous_nodes: list[str] = []
        for round_index in range(rounds):
            inputs: list[list[dict[str, Any]]] = [[{"role": "user", "content": task}] for _ in range(n)]
            if previous:
                shown = [comm.handoff(f"{role}.{m}", text) for m, text in enumerate(previous)]
                for member in range(n):
                    others = [(m, shown[m]) for m in range(n) if m != member]
                    inputs[member] += [{"role": "assistant", "content": previous[member] or ""},
                                       {"role": "user", "content": peers_message(round_index, others)}]
                    gw.feed(role, member, [previous_nodes[m] for m in range(n) if m != member])

            async def peer(member: int) -> None:
                try:
                    await Runner.run(agents[member], inputs[member], max_turns=max_turns)  # type: ignore[arg-type]
                except MaxTurnsExceeded:
                    step_limited.add(member)

            await run_members(n, peer)
            previous = [last_content(gw, role, m) for m in range(n)]
            previous_nodes = [gw.nodes(role, m)[-1] for m in range(n)]
            for member, text in enumerate(previous):  # every round's reports, as the native topology keeps them
                comm.report(f"{role}.{member}", text)
        return previous


RUNTIMES: dict[str, type] = {"decentralized": SdkDecentralized}
