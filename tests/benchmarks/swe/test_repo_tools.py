"""SWE repository tools on real git checkouts of a local mirror (section 10): per-member clones in Independent,
`git diff HEAD` of the selected member's checkout as the patch, tool sets per topology, path confinement and
shell_exec without network."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path
from typing import Any, Sequence

import anyio
import pytest

from benchmarks.swe.benchmark import SWEBenchmark
from benchmarks.swe.repo_tools import TOPOLOGY_TOOLS
from benchmarks.swe.tool_jail import run_repo_tool
from core.errors import DataError
from core.models import AgentOutput, Row
from core.topology import agent_scope
from engine.benchmark_setup import configure_benchmark, tool_environment
from tests.benchmarks.swe.repos import Attempt, row
from tests.topologies.scripted import Call, ScriptedContext, tool_call
from topologies.independent import Independent
from topologies.messages import tools_for
from topologies.prompts import seed_bundle
from topologies.sequential import Sequential


class RoutingContext(ScriptedContext):
    """Scripted replies; tool calls really run through the benchmark (as the engine's executor does)."""

    bench: Any = None
    row: Any = None

    async def call_tool(self, *, role: str, member: int, node_id: str, call: dict[str, Any]) -> str:
        args = json.loads(call["arguments"]) if isinstance(call["arguments"], str) else call["arguments"]
        result = await self.bench.call_tool(self.row, call["name"], args)
        self.tool_calls.append({"role": role, "member": member, "name": call["name"], "result": result})
        return result


def run_topology(topology: Any, bench: SWEBenchmark, r: Row, responder: Any, task: str = "swe") -> tuple[Any, Any]:
    ctx = RoutingContext(responder)
    ctx.bench, ctx.row = bench, r
    bundle = seed_bundle(topology.name, task, topology.roles(task, topology.team_size))

    async def main() -> Any:
        with anyio.fail_after(60):
            return await topology.run(r, bundle, ctx, bench)

    return anyio.run(main), ctx


@pytest.mark.slow
def test_independent_members_edit_their_own_clones_and_the_winner_diff_is_the_patch(mirror):
    repos, base = mirror
    bench = configure_benchmark(SWEBenchmark(), {"swe_repos": str(repos)}, None)
    assert tool_environment(bench) == {"swe_repository_tools": True, "conformant": True}
    fixes = {0: "a + b", 1: "a + b", 2: "b + a"}

    def responder(call: Call):
        if call.turn == 0:
            body = fixes.get(call.member, "a * b")
            return None, [tool_call("file_write", path="pkg/mod.py", content=f"def add(a, b):\n    return {body}\n")]
        return "Done; the patch is in the checkout.", ()

    out, ctx = run_topology(Independent(4), bench, row(base), responder)
    assert all(c["result"].startswith("wrote") for c in ctx.tool_calls)
    assert [t["function"]["name"] for t in ctx.calls[0].tools] == list(TOPOLOGY_TOOLS["independent"])
    patch = out.metadata["checkout_diff"]
    assert out.selected_member == 0 and out.metadata["vote"]["winner_key"]  # two members wrote a + b
    assert "-    return a - b" in patch and "+    return a + b" in patch and "later commit" not in patch
    assert "b + a" not in patch and "a * b" not in patch  # the other members edited other clones
    score = bench.score(row(base), out)
    assert score.value == 1.0 and score.metadata["rule"] == "structural"


def test_pipeline_stages_share_one_clone_and_use_str_replace(mirror):
    repos, base = mirror
    bench = configure_benchmark(SWEBenchmark(), {"swe_repos": str(repos)}, None)
    top = Sequential(4)
    stages = top.roles("swe", 4)

    def responder(call: Call):
        if call.tools and call.turn == 0 and call.role == stages[2]:
            return None, [tool_call("str_replace", path="pkg/mod.py", old_str="a - b", new_str="a + b")]
        if call.tools and call.turn == 0 and call.role == stages[3]:
            return None, [tool_call("file_read", path="pkg/mod.py")]
        return f"note from {call.role}", ()

    assert stages == ["investigator", "planner", "patcher", "tester"]
    out, ctx = run_topology(top, bench, row(base), responder)
    offered = {t["function"]["name"] for c in ctx.calls for t in (c.tools or [])}
    assert "str_replace" in offered and "file_write" not in offered
    assert [c["name"] for c in ctx.tool_calls] == ["str_replace", "file_read"]
    assert ctx.tool_calls[0]["result"] == "replaced 1 occurrence in pkg/mod.py"
    assert "return a + b" in ctx.tool_calls[1]["result"]  # the tester sees the patcher's edit: one shared clone
    assert "+    return a + b" in out.metadata["checkout_diff"]


def test_without_mirrors_swe_has_no_tools_and_is_non_conformant():
    bench = configure_benchmark(SWEBenchmark(), {}, None)
    assert bench.native_tools(row("0" * 40)) == [] and tool_environment(bench)["conformant"] is False
    out = AgentOutput(text="```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```")
    assert bench.score(row("0" * 40), out).value == 1.0  # no checkout: the fenced diff is the patch


@pytest.mark.slow
def test_tools_stay_inside_the_checkout(mirror, tmp_path):
    repos, base = mirror
    bench = SWEBenchmark().configure({"swe_repos": str(repos)})
    listener = socket.socket()  # a loopback server of the test's own: shell_exec must not reach it
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    port = listener.getsockname()[1]

    async def main() -> dict[str, str]:
        with agent_scope(Attempt(), "patcher", 0):
            results = {}
            for name, args in [("escape", ("file_read", {"path": "../../etc/passwd"})),
                               ("absolute", ("file_read", {"path": "/etc/passwd"})),
                               ("git", ("file_write", {"path": ".git/config", "content": "x"})),
                               ("twice", ("str_replace", {"path": "pkg/mod.py", "old_str": "", "new_str": "x"})),
                               ("list", ("list_dir", {"path": "."})),
                               ("grep", ("search_repo", {"pattern": "return a"})),
                               ("nogrep", ("search_repo", {"pattern": "zzz_nothing"})),
                               ("net", ("shell_exec", {"command": "python3 -c \"import socket; socket.create_connecti"
                                                       f"on(('127.0.0.1', {port}), timeout=3)\" && echo ONLINE || "
                                                       "echo OFFLINE"})),
                               ("pwd", ("shell_exec", {"command": "cat pkg/mod.py"}))]:
                results[name] = await bench.call_tool(row(base), *args)
            return results

    results = anyio.run(main)
    assert "leaves the repository" in results["escape"] and "relative" in results["absolute"]
    assert "read-only" in results["git"] and "occurs 0 times" in results["twice"]
    assert results["list"].splitlines() == ["pkg/"]
    assert results["grep"].startswith("pkg/mod.py:2:") and results["nogrep"].startswith("no matches")
    assert "OFFLINE" in results["net"] and "ONLINE" not in results["net"].replace("OFFLINE", "")
    with pytest.raises(BlockingIOError):
        listener.accept()  # the server saw no connection
    listener.close()
    assert "return a - b" in results["pwd"]


def test_missing_mirror_is_a_data_error(mirror, tmp_path):
    repos, base = mirror
    bench = SWEBenchmark().configure({"swe_repos": str(repos)})
    other = row(base).model_copy(update={"task": {**row(base).task, "repo": "acme/other"}})

    async def main() -> str:
        with agent_scope(Attempt(), "patcher", 0):
            return await bench.call_tool(other, "list_dir", {"path": "."})

    with pytest.raises(DataError, match="no local mirror of acme/other"):
        anyio.run(main)
    with pytest.raises(DataError, match="not a directory"):
        SWEBenchmark().configure({"swe_repos": str(tmp_path / "missing")})


def test_tool_sets_per_topology():
    bench = SWEBenchmark()
    bench.workspaces = object()  # type: ignore[assignment]  # only native_tools is read here
    r = row("0" * 40)
    for topology, names in TOPOLOGY_TOOLS.items():
        assert [t["function"]["name"] for t in tools_for(bench, r, topology)] == list(names)
    assert "file_write" in TOPOLOGY_TOOLS["single"] and "str_replace" not in TOPOLOGY_TOOLS["single"]
    assert "str_replace" in TOPOLOGY_TOOLS["centralized"] and "file_write" not in TOPOLOGY_TOOLS["centralized"]
    _ = run_repo_tool  # the blocking entry point the benchmark runs in a worker thread
