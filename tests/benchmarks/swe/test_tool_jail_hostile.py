"""The code benchmarks' hostile suite, run as SWE `shell_exec` commands and as file-tool arguments through the
function SWE agents use (`SWEBenchmark.call_tool`, which runs every tool in the jail of benchmarks/swe/tool_jail.py).
Every effect is checked on the host, never from the tool's reply: files absent, no connection accepted, sentinel
and engine alive, no secret or project text in anything the tool returned, no process left, the clone's git
directory unchanged. test_tool_jail_unprivileged.py repeats the core of it with the engine running as nobody.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.sandbox import SandboxLimits, probe
from benchmarks.swe import tool_jail
from benchmarks.swe.benchmark import SWEBenchmark
from core.models import AgentOutput
from core.topology import agent_scope
from tests.benchmarks.sandbox import hostile
from tests.benchmarks.sandbox.hostile import ATTACKS, Targets
from tests.benchmarks.swe.repos import Attempt, row

pytestmark = pytest.mark.skipif(not probe().available, reason="no bubblewrap jail on this machine")
SHORT = SandboxLimits(cpu_seconds=3, wall_seconds=5, memory_bytes=512 * 1024 * 1024, max_processes=64,
                      output_bytes=256 * 1024, site_packages=False)


@pytest.fixture
def targets(monkeypatch: pytest.MonkeyPatch):
    secret = f"sk-proc-environ-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setattr(tool_jail, "TOOL_LIMITS", SHORT)
    host_dir = tempfile.mkdtemp(prefix="mpbh-", dir="/tmp")  # short: it holds a Unix socket
    os.chmod(host_dir, 0o777)  # writable by anyone on the host: only the jail can keep the tools out
    t = Targets(write_dirs=[host_dir, "/tmp", "/dev/shm", str(hostile.ROOT), os.path.expanduser("~")],
                secret=secret, socket_dir=host_dir)
    try:
        yield t
    finally:
        t.close()
        shutil.rmtree(host_dir, ignore_errors=True)


def shell(source: str) -> str:
    return f"python3 - <<'MPB_EOF'\n{source}\nMPB_EOF"


class Agent:
    """One agent (one rollout attempt, member 0, one checkout) making tool calls through the benchmark."""

    def __init__(self, bench: SWEBenchmark, base: str) -> None:
        self.bench, self.row, self.attempt = bench, row(base), Attempt()

    def run(self, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
        async def main() -> list[str]:
            with agent_scope(self.attempt, "patcher", 0):
                return [await self.bench.call_tool(self.row, name, args) for name, args in calls]

        return anyio.run(main)

    def finish(self) -> Any:
        async def main() -> Any:
            with agent_scope(self.attempt, "patcher", 0):
                return await self.bench.finish_output(self.row, AgentOutput(text="done"))

        return anyio.run(main)

    def git_dir(self) -> Path:
        return self.bench.workspaces._by_rollout[id(self.attempt)][0].git_dir  # type: ignore[union-attr]

    def git_digest(self) -> str:
        """Every file of the clone's git directory (the engine's; never the model's to write), index aside."""
        h = hashlib.sha256()
        files = [p for p in sorted(self.git_dir().rglob("*")) if p.is_file() and p.name != "index"]
        assert files  # the clone exists: the digest is not of nothing
        for path in files:
            h.update(str(path).encode() + path.read_bytes())
        return h.hexdigest()


def left_behind(marker: str) -> list[int]:
    """Host pids whose command line holds `marker` (a process a tool call started and did not take with it)."""
    deadline, found = time.monotonic() + 5, []
    while time.monotonic() < deadline:
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
        if not found:
            return []
        time.sleep(0.1)
    return found


def assert_contained(outputs: list[str], t: Targets) -> None:
    everything = "\n".join(outputs)
    assert t.escaped() == [], t.escaped()
    assert hostile.leaked(everything, t) == []
    assert "uid=0" not in everything
    assert set(re.findall(r"uid=(\d+)", everything)) <= {"65534"}
    assert hostile.jail_processes() == []


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["read_shadow", "read_project", "read_environ", "write", "network",
                                    "kill_parent", "ctypes", "raise_rlimits"])
def test_each_attack_as_a_shell_command_is_contained(mirror, targets, attack):
    repos, base = mirror
    agent = Agent(SWEBenchmark().configure({"swe_repos": str(repos)}), base)
    agent.run([("list_dir", {"path": "."})])
    before = agent.git_digest()
    outputs = agent.run([("shell_exec", {"command": shell(hostile.program(ATTACKS[attack], targets.cfg()))})])
    assert outputs[0].startswith(("exit status", "error: the command ran past")), outputs[0]
    assert "uid=65534" in outputs[0]  # the attack did run, as nobody
    assert_contained(outputs, targets)
    assert agent.git_digest() == before


@pytest.mark.slow
def test_fork_bomb_10_gb_of_output_and_a_runaway_loop_are_stopped(mirror, targets):
    repos, base = mirror
    bench = SWEBenchmark().configure({"swe_repos": str(repos)})
    bomb, loop, flood = Agent(bench, base).run([
        ("shell_exec", {"command": "bomb() { bomb | bomb & }; bomb; sleep 30"}),
        ("shell_exec", {"command": "while :; do :; done"}),
        ("shell_exec", {"command": "head -c 10G /dev/zero | tr '\\0' x"}),
    ])
    assert bomb.startswith("error: the command ran past") and loop.startswith("error: the command ran past")
    assert "output passed 262144 bytes" in flood and len(flood) < 20_000
    assert_contained([bomb, loop, flood], targets)
    assert left_behind("bomb") == []


@pytest.mark.slow
def test_a_background_process_is_gone_when_the_call_returns(mirror, targets):
    repos, base = mirror
    bench = SWEBenchmark().configure({"swe_repos": str(repos)})
    marker = f"{time.time_ns() % 10_000 + 3000}"
    out = Agent(bench, base).run([("shell_exec", {"command": f"setsid sleep {marker} >/dev/null 2>&1 & "
                                                             f"nohup sleep {marker} >/dev/null 2>&1 & echo started"})])
    assert "started" in out[0] and "exit status: 0" in out[0]
    assert left_behind(f"sleep\0{marker}") == []


@pytest.mark.slow
def test_file_tools_cannot_leave_the_checkout(mirror, targets):
    repos, base = mirror
    agent = Agent(SWEBenchmark().configure({"swe_repos": str(repos)}), base)
    outside, stem = Path(targets.write_dirs[0]), targets.stem
    agent.run([("list_dir", {"path": "."})])
    before = agent.git_digest()
    hook = f"#!/bin/sh\\ntouch {outside}/{stem}-hook\\n"
    outputs = agent.run([
        ("file_read", {"path": "/etc/shadow"}),
        ("file_read", {"path": "../../../../etc/shadow"}),
        ("file_write", {"path": f"{outside}/{stem}-abs", "content": "x"}),
        ("file_write", {"path": f"../../../../../../..{outside}/{stem}-dots", "content": "x"}),
        ("shell_exec", {"command": f"ln -s /etc/shadow shadow; ln -s {outside} out; ln -s / root; "
                                   f"git config core.hooksPath /testbed/hooks; mkdir -p .git/hooks; "
                                   f"printf '{hook}' > .git/hooks/post-checkout; echo planted"}),
        ("file_read", {"path": "shadow"}),
        ("file_read", {"path": "root/etc/shadow"}),
        ("file_write", {"path": f"out/{stem}-symlink", "content": "x"}),
        ("str_replace", {"path": "pkg/mod.py", "old_str": "a - b", "new_str": "a + b"}),
        ("file_write", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch /tmp/x\n"}),
        ("list_dir", {"path": "root/proc"}),
    ])
    assert "must be relative" in outputs[0] and "leaves the repository" in outputs[1]
    assert outputs[2].startswith("error") and outputs[3].startswith("error")
    assert "planted" in outputs[4] and "Read-only file system" in outputs[4]
    assert outputs[8] == "replaced 1 occurrence in pkg/mod.py" and "read-only" in outputs[9]
    assert_contained(outputs, targets)
    assert not list(outside.glob(f"{stem}-*")) and agent.git_digest() == before
    assert "hooksPath" not in (agent.git_dir() / "config").read_text()
    assert not (agent.git_dir() / "hooks" / "post-checkout").exists()
    out = agent.finish()  # the engine takes the patch (git in the jail): no planted hook fires
    assert "+    return a + b" in out.metadata["checkout_diff"] and "checkout_diff_error" not in out.metadata
    assert not list(outside.glob(f"{stem}-*")) and agent.git_digest() == before
