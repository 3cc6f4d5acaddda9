"""The same hostile programs with the ENGINE itself running as an unprivileged user (uid 65534, no
capabilities), as on a cluster login: the test (root) starts the engine's sandbox call as uid 65534 (nsenter) in a
minimal namespace that holds the interpreter, this tree (read-only) and one world-writable directory, with the
host network shared and a secret in its environment. The engine then takes its ordinary-user path (bwrap
directly). Every effect is checked on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from benchmarks.sandbox import probe
from tests.benchmarks.sandbox import hostile
from tests.benchmarks.sandbox.hostile import ATTACKS, Targets

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the engine already runs unprivileged here: every "
                                                          "other sandbox test is this case")

DRIVER = """
import dataclasses, json, sys
from benchmarks.sandbox import SandboxLimits, run_python_sync
limits = SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=512 * 1024 * 1024, output_bytes=256 * 1024)
programs = json.load(open(sys.argv[1]))
print(json.dumps([dataclasses.asdict(run_python_sync(p, '', limits)) for p in programs]))
"""


@pytest.fixture
def shared_dir():
    path = tempfile.mkdtemp(prefix="mpb-unpriv-", dir="/tmp")
    os.chmod(path, 0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_unprivileged_engine(argv: list[str], shared: str, secret: str) -> subprocess.CompletedProcess[str]:
    plan = probe().plan
    assert plan is not None and plan.launcher, "needs the root launcher of the jail"
    outer = [*plan.launcher, plan.bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
             "--die-with-parent", "--uid", "65534", "--gid", "65534"]
    # the outer sandbox's own /tmp first, then the binds: a project or interpreter under /tmp stays visible
    outer += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for source, dest in plan.binds:
        outer += ["--ro-bind", source, dest]
    for target, link in plan.symlinks:
        outer += ["--symlink", target, link]
    outer += ["--ro-bind", str(hostile.ROOT), str(hostile.ROOT), "--bind", shared, shared, "--chdir", shared,
              "--clearenv",
              "--setenv", "PYTHONPATH", str(hostile.ROOT), "--setenv", "HOME", shared,
              "--setenv", "OPENAI_API_KEY", secret, "--setenv", "MPB_ENGINE_TOKEN", secret]
    return subprocess.run([*outer, "--", sys.executable, *argv], capture_output=True, text=True, timeout=240,
                          env={}, cwd="/", pass_fds=plan.keep_fds)


def host_uids_of(marker: str, stop: threading.Event, seen: set[int]) -> None:
    """Host uids of the engine's interpreter processes (argv[0] is this interpreter, `marker` among the
    arguments), until `stop` is set."""
    while not stop.is_set():
        for entry in os.listdir("/proc"):
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0") if entry.isdigit() else []
                if argv and argv[0] == sys.executable.encode() and marker.encode() in argv:
                    status = Path(f"/proc/{entry}/status").read_text()
                    seen.add(int(status.split("Uid:")[1].split()[0]))
            except OSError:
                continue
        stop.wait(0.05)


@pytest.mark.slow
def test_engine_as_unprivileged_user_contains_every_attack(shared_dir):
    secret = f"engine-secret-{uuid.uuid4().hex}"
    t = Targets(write_dirs=[shared_dir], secret=secret, socket_dir=shared_dir)
    try:
        cfg = t.cfg()
        names = ["fork_bomb", "allocate_10gb", "infinite_loop", "output_1gb"]
        programs = [hostile.program(hostile.ALL_AFTER_DISABLING, cfg)]
        programs += [hostile.program(ATTACKS[name], cfg) for name in names]
        programs.append("import os\nprint('ENV', dict(os.environ).__repr__().encode().hex())\n"
                        "for p in os.listdir('/proc'):\n    try:\n"
                        "        print('PROC', open('/proc/%s/environ' % p, 'rb').read().hex())\n"
                        "    except Exception:\n        pass\n")
        Path(shared_dir, "programs.json").write_text(json.dumps(programs))
        Path(shared_dir, "driver.py").write_text(DRIVER)
        stop, uids = threading.Event(), set()
        watcher = threading.Thread(target=host_uids_of, args=(f"{shared_dir}/driver.py", stop, uids))
        watcher.start()
        try:
            done = as_unprivileged_engine([f"{shared_dir}/driver.py", f"{shared_dir}/programs.json"], shared_dir,
                                          secret)
        finally:
            stop.set()
            watcher.join()
        assert uids == {65534}, uids  # the engine itself ran as nobody on the host
        assert done.returncode == 0, done.stderr[-2000:]
        results = json.loads(done.stdout)
        everything = json.dumps(results)
        assert t.escaped() == [], t.escaped()
        assert hostile.leaked(everything, t) == []
        assert secret.encode().hex() not in everything and "OPENAI_API_KEY".encode().hex() not in everything
        for result in results:
            assert result["isolation"]["kind"] == "bwrap" and result["isolation"]["launch"] == "bwrap"
            assert result["program_uid"] == 65534
            assert "uid=0" not in result["stdout"]
        battery, fork_bomb, memory, loop, output, env_dump = results
        assert "uid=65534" in battery["stdout"] and "guards disabled" in battery["stdout"]
        assert fork_bomb["timed_out"] and loop["timed_out"]
        assert memory["memory_exceeded"] and output["output_limit_exceeded"]
        assert env_dump["stdout"].startswith("ENV")
    finally:
        t.close()


@pytest.mark.slow
def test_sandbox_cli_as_unprivileged_user_reports_its_path(shared_dir):
    Path(shared_dir, "prog.py").write_text("import os\nprint(os.getuid())\n")
    done = as_unprivileged_engine(["-m", "engine", "sandbox", "run", f"{shared_dir}/prog.py"], shared_dir, "s" * 20)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["uid"] == 65534 and line["stdout_head"] == "65534\n" and line["exit_code"] == 0
    assert line["isolation"]["launch"] == "bwrap"
