"""Centralized on LangGraph: manager node + ToolNode + one node per worker (protocol-v1 section 2.4).

The manager is bound to one `delegate_to_<worker>` tool per worker (`topologies.centralized.delegate_tool`, the
team spec's descriptions) plus the dataset's tools where the team spec allows; its system prompt carries
`manager_extension` outside the editable text. After a manager reply with tool calls, the ToolNode answers them
(dataset tools through the gateway; the first valid delegation is chosen, invalid or extra ones get the native
error text) and a conditional edge routes to the chosen worker's node; the worker (a ReAct graph on the shared
conversation, `worker_view`) has an edge back to the manager, and its re-rendered report becomes the delegate
call's tool result. The router ends on TERMINATE or on the team spec's turn cap (every agent model call counts); a
manager reply with neither tool calls nor TERMINATE gets the native nudge. Mirrors topologies/centralized.py
turn for turn, so reads, turns and seeds are the native ones. Team specs in mode `report_round` run
topologies/frameworks/langgraph/report_round.py.

The graph is compiled once per worker list (`hub_graph`); each rollout's `Hub` (its routing and bookkeeping) and
its ToolNode lock come with the run's `config["configurable"]`.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, TypedDict

import anyio
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from core.benchmark import Benchmark, rerenders_handoffs
from core.communication import CommunicationLog
from core.topology import AgentContext
from core.models import AgentOutput, PromptBundle, Row
from topologies.frameworks.langgraph.agent import (FRAMEWORK, Team, episode_of, open_team, react, start_messages,
                                        tool_node)
from topologies.frameworks.langgraph.report_round import run_report_round
from topologies.centralized import (DELEGATE_PREFIX, NUDGE, TERMINATE, Centralized, delegate_tool, manager_extension,
                                    strip_terminate, worker_view)
from topologies.messages import call_arguments, editable, finish_output, system_prompt, tools_for
from topologies.teams import CentralizedTeam, Worker, team_spec


class HubState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]  # the manager's conversation


def _hub(config: RunnableConfig) -> "Hub":
    hub: Hub = episode_of(config)["hub"]
    return hub


async def _manager(state: HubState, config: RunnableConfig) -> dict[str, Any]:
    return await _hub(config).manager(state)


async def _answer_manager_call(configurable: Any, call: dict[str, Any]) -> str:
    hub: Hub = configurable["hub"]
    return await hub.answer_call(call)


async def _next_route(state: HubState, config: RunnableConfig) -> str:  # async: LangGraph runs a sync one in a thread
    return _hub(config).route


async def _route_after_tools(state: HubState, config: RunnableConfig) -> str:
    return _hub(config).after_tools


def _worker_node(name: str) -> Any:
    async def run_worker(state: HubState, config: RunnableConfig) -> dict[str, Any]:
        return await _hub(config).run_worker(name, state)

    return run_worker


@cache
def hub_graph(workers: tuple[str, ...]) -> Any:
    """Manager, ToolNode and one node per worker, compiled once per worker list; each run's `Hub` (the rollout's
    bookkeeping and routing) comes with its config."""
    graph = StateGraph(HubState)
    graph.add_node("manager", _manager)
    graph.add_node("tools", tool_node(_answer_manager_call))
    targets = ["manager", "tools", END]
    for name in workers:
        graph.add_node(f"worker_{name}", _worker_node(name))
        graph.add_conditional_edges(f"worker_{name}", _next_route, ["manager", END])
        targets.append(f"worker_{name}")
    graph.add_edge(START, "manager")
    graph.add_conditional_edges("manager", _next_route, targets)
    graph.add_conditional_edges("tools", _route_after_tools, targets)
    return graph.compile()


class LangGraphCentralized(Centralized):
    name = "centralized"
    framework = FRAMEWORK

    async def run(self, row: Row, bundle: PromptBundle, ctx: AgentContext, bench: Benchmark) -> AgentOutput:
        team = team_spec(bench.name).centralized(self.team_size)
        comm = CommunicationLog(self.communication, bench.report_vocabulary,
                                rerender=rerenders_handoffs(bench, self.name))
        native = [] if bench.answer_is_native_call else tools_for(bench, row, self.name)
        if team.mode == "report_round":
            async with open_team(ctx) as agents:
                output = await run_report_round(agents, team, row, bundle, bench, comm, self.policy, native)
            return await finish_output(bench, row, ctx, output)
        async with open_team(ctx) as agents:
            hub = Hub(self, agents, row, bundle, bench, team, comm, native)
            await hub_graph(tuple(w.name for w in team.workers)).ainvoke(
                {"messages": hub.start()}, config={"recursion_limit": 3 * team.max_turns + 4,
                                                   "configurable": {"hub": hub, "tool_lock": hub.tool_lock}})
        output = hub.output(row)
        return await finish_output(bench, row, ctx, output)


class Hub:
    """One rollout's manager/worker graph and its bookkeeping (the native loop's, field for field)."""

    def __init__(self, topology: LangGraphCentralized, agents: Team, row: Row, bundle: PromptBundle,
                 bench: Benchmark, team: CentralizedTeam, comm: CommunicationLog, native: list[dict[str, Any]]):
        self.topology, self.agents, self.bundle, self.bench, self.team, self.comm = (
            topology, agents, bundle, bench, team, comm)
        self.policy = topology.policy
        self.native = native
        self.workers = {w.name: w for w in team.workers}
        self.task = bench.render_task(row)
        self.manager_tools = [delegate_tool(w) for w in team.workers] + (native if team.manager_tools else [])
        self.shared: list[tuple[str, str]] = []
        self.shared_nodes: list[str] = []
        self.delegations: list[str] = []
        self.invalid: list[dict[str, Any]] = []
        self.role_outputs: dict[str, str | None] = {}
        self.turns, self.stop = 0, "turn_cap"
        self.manager_text: str | None = None
        self.last_tool_result: str | None = None
        self.planned: dict[str, str] = {}  # delegate call id -> its tool result (chosen: filled by the worker)
        self.chosen: tuple[Worker, dict[str, Any]] | None = None
        self.route: str = END  # where the graph goes after the manager or a worker
        self.after_tools: str = END  # where it goes after the ToolNode answered a manager turn
        self.tool_lock = anyio.Lock()  # the ToolNode answers a reply's calls one at a time, in order

    def start(self) -> list[AnyMessage]:
        system = system_prompt(editable(self.bundle, self.team.manager), answering=True, bench=self.bench,
                               comm=self.comm, extension=manager_extension(self.team), role=self.team.manager,
                               policy=self.policy)
        return start_messages(system, self.task)

    def _more_turns(self) -> str:
        return "manager" if self.turns < self.team.max_turns else END

    async def manager(self, state: HubState) -> dict[str, Any]:
        manager, comm = self.team.manager, self.comm
        reply = await self.agents.call(manager, 0, state["messages"], self.manager_tools)
        node = self.agents.gw.nodes(manager, 0)[-1]
        call = next(c for c in reversed(self.agents.gw.calls()) if c.node_id == node)
        self.turns += 1
        self.manager_text = call.content
        final = strip_terminate(call.content)
        if call.content and call.content.strip():
            self.shared.append(("manager", comm.handoff("manager", final)))
            self.shared_nodes.append(node)
        if TERMINATE in (call.content or "") or not reply.tool_calls:
            comm.report(f"{manager}.0", final)
        if TERMINATE in (call.content or ""):
            self.stop, self.route = "terminate", END
            return {"messages": [reply]}
        if not reply.tool_calls:
            self.route = self._more_turns()
            return {"messages": [reply, HumanMessage(content=NUDGE)]}
        self._plan(reply.tool_calls, call.turn)
        self.route = "tools"
        return {"messages": [reply]}

    def _plan(self, calls: list[Any], turn: int) -> None:
        """Which delegation this manager turn chooses, and the error results of the other delegate calls."""
        self.chosen, self.planned = None, {}
        for call in calls:
            name, call_id = str(call.get("name", "")), str(call.get("id"))
            if not name.startswith(DELEGATE_PREFIX):
                continue
            target = name[len(DELEGATE_PREFIX):]
            if target not in self.workers:
                self.invalid.append({"manager_turn": turn, "tool": name})
                self.planned[call_id] = (f"error: there is no worker named {target!r}; your workers are: "
                                         f"{', '.join(self.workers)}.")
            elif self.chosen is not None:
                self.planned[call_id] = (f"error: one worker at a time; {self.chosen[0].name} takes this turn. "
                                         f"Delegate to {target} afterwards if still needed.")
            else:
                self.chosen = (self.workers[target], {"id": call_id, "name": name, "arguments": call.get("args")})
                self.planned[call_id] = ""
        if self.chosen is None:
            self.after_tools = self._more_turns()
        elif self.turns >= self.team.max_turns:
            self.after_tools = END
        else:
            self.after_tools = f"worker_{self.chosen[0].name}"

    async def answer_call(self, call: dict[str, Any]) -> str:
        """The ToolNode's answer to one manager tool call: a planned delegate result, or a dataset tool run."""
        call_id = str(call.get("id"))
        if call_id in self.planned:
            return self.planned[call_id]
        result = await self.agents.run_tool(self.team.manager, 0, call)
        self.last_tool_result = result
        return result

    async def run_worker(self, name: str, state: HubState) -> dict[str, Any]:
        worker = self.workers[name]
        assert self.chosen is not None and self.chosen[0] is worker
        rendered, node = await self._delegate(worker, self.chosen[1])
        manager_node = self.agents.gw.nodes(self.team.manager, 0)[-1]
        self.agents.gw.feed(self.team.manager, 0, (manager_node, node))
        self.route = self._more_turns()
        call_id = self.chosen[1]["id"]
        placeholder = next(m for m in state["messages"]
                           if isinstance(m, ToolMessage) and m.tool_call_id == call_id)
        return {"messages": [ToolMessage(content=rendered, tool_call_id=call_id, name=placeholder.name,
                                         id=placeholder.id)]}

    async def _delegate(self, worker: Worker, call: dict[str, Any]) -> tuple[str, str]:
        args = call_arguments(call)
        instruction = str(args.get("task", "")) if args else str(call.get("arguments", ""))
        self.delegations.append(worker.name)
        self.shared_nodes.append(self.agents.gw.nodes(self.team.manager, 0)[-1])
        system = system_prompt(editable(self.bundle, worker.name), answering=worker.answers, bench=self.bench,
                               comm=self.comm, role=worker.name, policy=self.policy)
        turn, _ = await react(self.agents, role=worker.name, member=0,
                              messages=start_messages(system, worker_view(self.task, self.shared, worker.name,
                                                                          instruction)),
                              tools=self.native if worker.tools else None,
                              reads=tuple(dict.fromkeys(self.shared_nodes)),
                              max_steps=min(self.team.worker_step_limit, self.team.max_turns - self.turns))
        self.turns += turn.n_calls
        if turn.last_tool_result is not None:
            self.last_tool_result = turn.last_tool_result
        self.comm.report(f"{worker.name}.0", turn.text)
        self.role_outputs[worker.name] = turn.text
        rendered = self.comm.handoff(worker.name, turn.text)
        self.shared.append((f"manager -> {worker.name}", instruction))
        self.shared.append((worker.name, rendered))
        self.shared_nodes.append(turn.node_id)
        return rendered, turn.node_id

    def output(self, row: Row) -> AgentOutput:
        team, final = self.team, strip_terminate(self.manager_text)
        self.role_outputs[team.manager] = final
        metadata: dict[str, Any] = {
            "team_size": self.topology.team_size, "manager": team.manager, "workers": [w.name for w in team.workers],
            "turns": self.turns, "max_turns": team.max_turns, "stop": self.stop, "delegations": self.delegations,
            "answer_source": team.manager, **self.comm.metadata(),
        }
        if self.stop == "turn_cap":
            metadata["stop_reason"] = f"turn cap of {team.max_turns} reached without {TERMINATE}"
        if self.invalid:
            metadata["invalid_delegations"] = self.invalid
        if self.bench.vote_key(row, AgentOutput(text=final)) is None:
            metadata["no_valid_answer"] = True
        metadata["role_outputs"] = self.role_outputs
        if self.last_tool_result is not None:
            metadata["last_tool_result"] = self.last_tool_result
        return AgentOutput(text=final, selected_member=0, metadata=metadata)
