"""SWE's repository tools with the ENGINE itself running as an unprivileged user (uid 65534, no capabilities),
as on a cluster login: the test (root) starts a driver as uid 65534 in a minimal namespace holding /usr, the
interpreter, this tree (read-only) and one world-writable directory, with a secret in its environment. The driver
builds a mirror there, takes a checkout through SWEBenchmark and runs the hostile suite as shell_exec commands and
file-tool arguments; the engine takes its ordinary-user path (bwrap directly). Every effect is checked on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from benchmarks.sandbox import probe
from tests.benchmarks.sandbox import hostile
from tests.benchmarks.sandbox.hostile import ATTACKS, Targets
from tests.benchmarks.swe.test_tool_jail_hostile import left_behind

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not probe().available,
                                reason="needs root to start the engine as nobody, and the jail")

DRIVER = """
import json, sys
from pathlib import Path
import anyio
from benchmarks.sandbox import SandboxLimits
from benchmarks.swe import tool_jail
from benchmarks.swe.benchmark import SWEBenchmark
from core.topology import agent_scope
from tests.benchmarks.swe.repos import Attempt, make_mirror, row
tool_jail.TOOL_LIMITS = SandboxLimits(cpu_seconds=3, wall_seconds=5, memory_bytes=512 * 1024 * 1024,
                                      max_processes=64, output_bytes=256 * 1024, site_packages=False)
shared = Path(sys.argv[1])
repos, base = make_mirror(shared / 'mirror')
bench = SWEBenchmark().configure({'swe_repos': str(repos)})
calls = json.load(open(sys.argv[2]))
attempt = Attempt()
async def main():
    with agent_scope(attempt, 'patcher', 0):
        outs = [await bench.call_tool(row(base), name, args) for name, args in calls]
        done = await bench.finish_output(row(base), __import__('core.models').models.AgentOutput(text='x'))
        return outs, done.metadata
outs, meta = anyio.run(main)
print(json.dumps({'outputs': outs, 'patch': meta['checkout_diff'], 'iso': bench.workspaces.isolation().as_dict()}))
"""


def as_unprivileged_engine(argv: list[str], shared: str, secret: str) -> subprocess.CompletedProcess[str]:
    plan = probe().plan
    assert plan is not None and plan.launcher, "needs the root launcher of the jail"
    outer = [*plan.launcher, plan.bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--die-with-parent", "--uid", "65534", "--gid", "65534", "--proc", "/proc", "--dev", "/dev",
             "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin"]
    for source, dest in plan.binds:
        outer += ["--ro-bind", source, dest]
    for target, link in plan.symlinks:
        outer += ["--symlink", target, link]
    outer += ["--ro-bind", str(hostile.ROOT), str(hostile.ROOT), "--bind", shared, shared, "--chdir", shared,
              "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "PYTHONPATH", str(hostile.ROOT),
              "--setenv", "HOME", shared, "--setenv", "TMPDIR", shared,
              "--setenv", "OPENAI_API_KEY", secret, "--setenv", "MPB_ENGINE_TOKEN", secret]
    return subprocess.run([*outer, "--", sys.executable, *argv], capture_output=True, text=True, timeout=240,
                          env={}, cwd="/", pass_fds=plan.keep_fds)


@pytest.mark.slow
def test_engine_as_nobody_keeps_every_tool_call_in_the_jail():
    shared = tempfile.mkdtemp(prefix="mpbu-", dir="/tmp")
    os.chmod(shared, 0o777)
    secret = f"engine-secret-{uuid.uuid4().hex}"
    t = Targets(write_dirs=[shared], secret=secret, socket_dir=shared)
    try:
        cfg = t.cfg()
        shells = [f"python3 - <<'MPB_EOF'\n{hostile.program(ATTACKS[name], cfg)}\nMPB_EOF"
                  for name in ("read_environ", "write", "network", "kill_parent")]
        calls = [["shell_exec", {"command": c}] for c in shells]
        calls += [["shell_exec", {"command": "setsid sleep 3913 >/dev/null 2>&1 & bomb() { bomb | bomb & }; bomb; sleep 30"}],
                  ["shell_exec", {"command": "head -c 10G /dev/zero"}],
                  ["file_write", {"path": f"{shared}/{t.stem}-abs", "content": "x"}],
                  ["shell_exec", {"command": f"ln -s {shared} out; git config core.hooksPath /tmp; echo x >> "
                                             f"pkg/mod.py"}],
                  ["file_write", {"path": f"out/{t.stem}-link", "content": "x"}]]
        Path(shared, "calls.json").write_text(json.dumps(calls))
        Path(shared, "driver.py").write_text(DRIVER)
        done = as_unprivileged_engine([f"{shared}/driver.py", shared, f"{shared}/calls.json"], shared, secret)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout)
        everything = json.dumps(result["outputs"])
        assert result["iso"]["launch"] == "bwrap"  # the ordinary-user path: bwrap started directly
        assert t.escaped() == [], t.escaped()
        assert hostile.leaked(everything, t) == [] and secret not in everything
        assert "uid=65534" in everything and "uid=0" not in everything
        bomb, flood = result["outputs"][4:6]
        assert bomb.startswith("error: the command ran past") and "output passed" in flood
        assert "Read-only file system" in result["outputs"][7] or "could not lock" in result["outputs"][7]
        assert "+x" in result["patch"]
        assert not [p for p in os.listdir(shared) if p.startswith(f"{t.stem}-")]
        assert hostile.jail_processes() == [] and left_behind("sleep\0" + "3913") == []
    finally:
        t.close()
        shutil.rmtree(shared, ignore_errors=True)
