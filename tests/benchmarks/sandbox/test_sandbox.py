"""Ordinary programs in the jail: results, limits, the async face, and the no-silent-fallback rule."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from benchmarks.sandbox import (
    SandboxLimits, SandboxUnavailable, allow_unsafe_sandbox, probe, run_python, run_python_sync, sandbox_limiter,
)
from benchmarks.sandbox import isolation as isolation_module
from benchmarks.sandbox.aio import default_concurrency

SMALL = SandboxLimits(cpu_seconds=1, wall_seconds=5, memory_bytes=512 * 1024 * 1024, output_bytes=64 * 1024)


def test_this_machine_has_the_jail():
    iso = probe()
    assert iso.available and iso.kind == "bwrap", iso.reason


def test_ordinary_program_reads_stdin_and_exits_zero():
    result = run_python_sync("import sys\nprint(sys.stdin.read().upper(), end='')\n", "hello\n", SMALL)
    assert result.ok and result.exit_code == 0 and result.signal is None
    assert result.stdout == "HELLO\n" and result.stderr == ""
    assert not result.timed_out and not result.stdout_truncated
    assert result.isolation["kind"] == "bwrap" and result.program_uid == 65534


def test_program_runs_as_65534_in_an_empty_environment_in_its_own_workdir():
    code = ("import os, sys\nprint(os.getuid(), os.geteuid(), os.getgid())\nprint(sorted(os.environ))\n"
            "print(os.getcwd(), sorted(os.listdir('.')))\nprint(sorted(os.listdir('/')))\n")
    result = run_python_sync(code, "", SMALL)
    assert result.ok, result.stderr
    ids, env, cwd, root = result.stdout.splitlines()
    assert ids == "65534 65534 65534"
    assert set(eval(env)) <= {"PATH", "HOME", "TMPDIR", "PWD", "PYTHONHASHSEED", "OMP_NUM_THREADS",
                              "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LC_CTYPE"}
    assert cwd == "/work ['main.py']"
    assert not {"etc", "home", "var", "opt", "srv", "mnt", "boot", "sys"} & set(eval(root))


def test_exit_code_and_traceback_are_reported():
    result = run_python_sync("import sys\nprint('x')\nsys.exit(3)\n", "", SMALL)
    assert result.exit_code == 3 and not result.ok
    crash = run_python_sync("def f():\n    return 1 / 0\nf()\n", "", SMALL)
    assert crash.exit_code == 1
    assert "ZeroDivisionError" in crash.stderr and 'File "main.py", line 2' in crash.stderr


def test_syntax_error_is_a_runtime_failure_not_a_crash():
    result = run_python_sync("def f(:\n", "", SMALL)
    assert result.exit_code == 1 and "SyntaxError" in result.stderr


def test_honest_programs_can_use_numpy_threads_subprocess_free_stdlib_and_tempfiles():
    code = ("import numpy, tempfile, threading, json, sqlite3\n"
            "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
            "with tempfile.TemporaryDirectory() as d:\n    open(d + '/f', 'w').write('1')\n"
            "db = sqlite3.connect('local.db'); db.execute('create table t(x)'); db.commit()\n"
            "print(int(numpy.arange(5).sum()), json.dumps([1]))\n")
    result = run_python_sync(code, "", SMALL)
    assert result.ok, result.stderr
    assert result.stdout == "thread\n10 [1]\n"


@pytest.mark.slow
def test_sleeping_program_hits_the_wall_limit():
    result = run_python_sync("import time\ntime.sleep(60)\n", "", SMALL.with_(wall_seconds=1))
    assert result.timed_out and result.timeout_kind == "wall" and result.signal is not None


def test_huge_stderr_is_truncated():
    result = run_python_sync("import sys\nsys.stderr.write('e' * 100000)\n", "", SMALL.with_(output_bytes=1000))
    assert result.stderr_truncated and len(result.stderr) == 1000


def test_limits_reject_nonsense():
    with pytest.raises(ValueError):
        SandboxLimits(wall_seconds=0)


@pytest.mark.slow
def test_async_run_keeps_the_event_loop_serving_other_tasks():
    order: list[str] = []

    async def main() -> None:
        async def sandboxed() -> None:
            result = await run_python("import time\ntime.sleep(1.5)\nprint('done')\n", "", SMALL)
            assert result.ok
            order.append("sandbox")

        async def other() -> None:
            for _ in range(5):
                await anyio.sleep(0.01)
            order.append("other")

        async with anyio.create_task_group() as tg:
            tg.start_soon(sandboxed)
            tg.start_soon(other)

    anyio.run(main)
    assert order == ["other", "sandbox"]


def test_shared_limiter_is_sized_to_the_cores():
    async def main() -> tuple[float, bool]:
        return sandbox_limiter().total_tokens, sandbox_limiter() is sandbox_limiter()

    tokens, same = anyio.run(main)
    assert tokens == default_concurrency() and same


def test_the_test_process_environment_is_untouched():
    before = dict(os.environ)
    run_python_sync("import os\nos.environ['X'] = '1'\n", "", SMALL)
    assert dict(os.environ) == before


def test_importing_the_bootstrap_is_inert():
    import importlib

    module = importlib.import_module("benchmarks.sandbox._bootstrap")
    assert callable(module._bootstrap)


@pytest.fixture
def no_jail(monkeypatch: pytest.MonkeyPatch):
    """The process's isolation as on a machine whose bwrap is missing (probed for real, with MPB_BWRAP)."""
    monkeypatch.setenv("MPB_BWRAP", "/nonexistent/bwrap")
    monkeypatch.setattr(isolation_module, "_cached", None)
    yield
    monkeypatch.setattr(isolation_module, "_cached", None)


def test_without_a_jail_execution_is_refused_not_silently_unjailed(no_jail, tmp_path: Path):
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="cannot be jailed.*MPB_BWRAP.*--unsafe-sandbox"):
        run_python_sync(f"open({str(marker)!r}, 'w').write('x')\n", "", SMALL)
    assert not marker.exists()


def test_unsafe_mode_runs_only_in_the_context_that_allowed_it(no_jail):
    async def allowed() -> str:
        allow_unsafe_sandbox()
        return (await run_python("print('ran')\n", "", SMALL)).isolation["kind"]

    assert anyio.run(allowed) == "unsafe"
    with pytest.raises(SandboxUnavailable):  # the permission did not leak out of that run's context
        run_python_sync("print('ran')\n", "", SMALL)
