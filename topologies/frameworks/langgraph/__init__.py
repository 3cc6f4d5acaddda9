"""LangGraph runtimes for all five topologies (protocol-v1 section 2; `--cell ...,framework=langgraph`).

Each agent is a LangGraph graph whose model is `langchain_openai.ChatOpenAI` on the agent's own route of the
engine's recording gateway (max_retries=0: a retry is the runner's, with the same seed), invoked on the job's
event loop. Prompts, step limits, hand-off formats, team sizes and output metadata are the native topologies'
(the runtimes build them with the same helpers from topologies/), so a LangGraph cell and its native cell call
the same roles in the same dependency structure.

LangSmith tracing is switched off here: nothing may try to reach the network.
"""

from __future__ import annotations

import os

for _name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
    os.environ[_name] = "false"

from topologies.frameworks.langgraph.centralized import LangGraphCentralized  # noqa: E402
from topologies.frameworks.langgraph.decentralized import LangGraphDecentralized  # noqa: E402
from topologies.frameworks.langgraph.independent import LangGraphIndependent  # noqa: E402
from topologies.frameworks.langgraph.sequential import LangGraphSequential  # noqa: E402
from topologies.frameworks.langgraph.single import LangGraphSingle  # noqa: E402

RUNTIMES: dict[str, type] = {
    "single": LangGraphSingle,
    "independent": LangGraphIndependent,
    "sequential": LangGraphSequential,
    "centralized": LangGraphCentralized,
    "decentralized": LangGraphDecentralized,
}

__all__ = ["RUNTIMES"]
