"""Framework runtimes: topologies whose agents are a real framework's objects (LangGraph, CrewAI, AutoGen, the
OpenAI Agents SDK), each an install extra, recorded through the engine's gateway (core.framework).

Each runtime module exports `RUNTIMES: dict[str, type]` (topology name -> class). A runtime class implements
core.topology.Topology plus `framework` (the --cell value); its constructor takes (team_size, communication,
contract_version). It may import core/ and topologies/ (to build the same prompts and messages as the native
topologies), never engine/.
"""
