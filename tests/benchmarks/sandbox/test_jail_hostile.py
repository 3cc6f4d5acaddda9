"""Hostile programs through the function the benchmarks use, and through the APPS scorer: every case is
contained (checked on the host: files absent, no connection accepted, sentinel alive, no secret in anything the
program emitted, no process left) and scores 0. The program's uid is never 0.

The engine here runs as whoever runs the tests (root in CI); test_unprivileged.py repeats the suite with the
engine itself running as an unprivileged user.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from pathlib import Path

import pytest

from benchmarks.apps import APPSBenchmark
from benchmarks.sandbox import SandboxLimits, SandboxResult, run_python_sync
from core.models import AgentOutput
from tests.benchmarks.sandbox import hostile
from tests.benchmarks.sandbox.hostile import ATTACKS, Targets

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=4, memory_bytes=512 * 1024 * 1024, output_bytes=256 * 1024)
BENCH = APPSBenchmark(limits=LIMITS)
FIXTURES = Path(__file__).parents[1] / "apps" / "fixtures"


@pytest.fixture(scope="module")
def row():
    return BENCH.load_rows(["0"], FIXTURES)[0]


@pytest.fixture
def targets(monkeypatch: pytest.MonkeyPatch):
    secret = f"sk-proc-environ-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    home = os.path.expanduser("~")
    t = Targets(write_dirs=[home, "/tmp", "/dev/shm", str(hostile.ROOT)], secret=secret, socket_dir="/tmp")
    try:
        yield t
    finally:
        t.close()


def no_jail_left() -> list[int]:
    deadline = time.monotonic() + 10
    while (left := hostile.jail_processes()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def assert_contained(result: SandboxResult, t: Targets) -> None:
    assert t.escaped() == [], t.escaped()
    assert hostile.leaked(result.stdout + result.stderr, t) == []
    assert "uid=0" not in result.stdout and result.program_uid != 0
    uids = re.findall(r"uid=(\d+)", result.stdout)
    assert all(u == "65534" for u in uids), uids
    assert no_jail_left() == []


def score_is_zero(row, code: str, t: Targets) -> None:
    score = BENCH.score(row, AgentOutput(text=f"```python\n{code}```\n"))
    assert score.value == 0.0
    assert hostile.leaked(score.feedback, t) == [] and t.secret not in score.feedback
    assert t.escaped() == [], t.escaped()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["read_shadow", "read_project", "read_environ", "write", "network", "kill_parent",
                                  "ctypes"])
def test_attack_is_contained_and_scores_zero(name, row, targets):
    code = hostile.program(ATTACKS[name], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert result.stdout.startswith("uid=65534"), result.stderr
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


@pytest.mark.slow
def test_reads_see_nothing_of_the_host(targets):
    result = run_python_sync(hostile.program(ATTACKS["read_shadow"] + ATTACKS["read_project"], targets.cfg()), "",
                             LIMITS)
    assert "denied /etc/shadow FileNotFoundError" in result.stdout
    assert "denied /etc/passwd FileNotFoundError" in result.stdout
    assert f"denied {hostile.ROOT / 'pyproject.toml'} FileNotFoundError" in result.stdout


def test_environ_of_every_visible_process_is_empty_of_secrets(targets):
    result = run_python_sync(hostile.program(ATTACKS["read_environ"], targets.cfg()), "", LIMITS)
    assert f"denied {targets.sentinel.pid} environ" in result.stdout  # host pids are not even visible
    assert targets.secret not in result.stdout and "OPENAI_API_KEY" not in result.stdout


@pytest.mark.slow
def test_fork_bomb_is_contained(row, targets):
    code = hostile.program(ATTACKS["fork_bomb"], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert not result.ok and result.timed_out
    assert_contained(result, targets)
    score_is_zero(row, code, targets)
    assert no_jail_left() == []


def test_ten_gigabytes_are_refused(row, targets):
    code = hostile.program(ATTACKS["allocate_10gb"], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert result.memory_exceeded and "allocated" not in result.stdout
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


@pytest.mark.slow
def test_raising_rlimits_fails_and_the_limit_still_holds(row, targets):
    code = hostile.program(ATTACKS["raise_rlimits"], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert "raised RLIMIT_AS" not in result.stdout and "denied RLIMIT_AS ValueError" in result.stdout
    assert result.memory_exceeded and "allocated" not in result.stdout
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


@pytest.mark.slow
def test_infinite_loop_is_stopped_and_nothing_survives(row, targets):
    code = hostile.program(ATTACKS["infinite_loop"], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert result.timed_out and result.signal is not None
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


def test_a_gigabyte_of_output_is_cut_at_the_cap(row, targets):
    code = hostile.program(ATTACKS["output_1gb"], targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert result.output_limit_exceeded and result.stdout_truncated
    assert len(result.stdout) == LIMITS.output_bytes
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


def test_kill_parent_leaves_the_engine_and_host_processes_alive(targets):
    result = run_python_sync(hostile.program(ATTACKS["kill_parent"], targets.cfg()), "", LIMITS)
    assert targets.sentinel.poll() is None
    assert f"denied {targets.sentinel.pid}" in result.stdout or f"killed? {targets.sentinel.pid}" in result.stdout
    after = run_python_sync("print('still working')\n", "", LIMITS)  # the engine goes on
    assert after.ok and after.stdout == "still working\n"


def test_ctypes_cannot_regain_root(targets):
    result = run_python_sync(hostile.program(ATTACKS["ctypes"], targets.cfg()), "", LIMITS)
    assert "uid now 65534" in result.stdout and "uid=65534" in result.stdout.splitlines()[-1]
    assert "open shadow -1" in result.stdout and "mount -1" in result.stdout
    assert "unshare(newuser|newns) -1" in result.stdout  # no nested namespaces to play root in
    assert_contained(result, targets)


@pytest.mark.slow
def test_disabling_in_process_guards_then_everything_is_still_contained(row, targets):
    code = hostile.program(hostile.ALL_AFTER_DISABLING, targets.cfg())
    result = run_python_sync(code, "", LIMITS)
    assert "guards disabled" in result.stdout
    assert_contained(result, targets)
    score_is_zero(row, code, targets)


def test_flooding_the_status_pipe_of_its_reporter_neither_fakes_success_nor_bloats_the_engine():
    code = ("import os\nppid = os.getppid()\n"
            "for fd in os.listdir('/proc/%d/fd' % ppid):\n"
            "    try:\n        w = os.open('/proc/%d/fd/%s' % (ppid, fd), os.O_WRONLY)\n    except OSError:\n"
            "        continue\n    try:\n        os.write(w, b'{\"wait_status\": 0}')\n"
            "        for _ in range(20000):\n            os.write(w, b'x' * 65536)\n    except OSError:\n        pass\n"
            "raise SystemExit(3)\n")
    result = run_python_sync(code, "", LIMITS)
    assert result.exit_code == 3 and not result.ok  # its own exit status, not the forged one


@pytest.mark.slow
def test_on_the_host_every_process_of_the_program_is_uid_65534():
    import sys
    import threading

    seen: dict[int, int] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for pid in hostile.jail_processes():
                try:
                    argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
                    if argv0 == sys.executable.encode():
                        seen[pid] = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[1])
                except (OSError, IndexError):
                    continue
            stop.wait(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = run_python_sync("import os, time\nif os.fork() == 0:\n    time.sleep(1.5)\nelse:\n    time.sleep(1.5)\n"
                                 "print(os.getuid())\n", "", LIMITS)
    finally:
        stop.set()
        watcher.join()
    assert result.ok and result.stdout.strip().splitlines()[-1] == "65534"
    assert len(seen) >= 2 and set(seen.values()) == {65534}, seen  # effective uid on the host
