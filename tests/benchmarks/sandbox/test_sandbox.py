"""Hostile and ordinary programs in the sandbox: each is contained and reported, none hurts the test process."""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

import anyio
import pytest

from benchmarks.sandbox import SandboxLimits, probe, run_python, run_python_sync, sandbox_limiter
from benchmarks.sandbox.aio import default_concurrency

SMALL = SandboxLimits(cpu_seconds=1, wall_seconds=5, memory_bytes=512 * 1024 * 1024, output_bytes=64 * 1024)
FALLBACK = probe(force_fallback=True)


def test_ordinary_program_reads_stdin_and_exits_zero():
    result = run_python_sync("import sys\nprint(sys.stdin.read().upper(), end='')\n", "hello\n", SMALL)
    assert result.ok and result.exit_code == 0 and result.signal is None
    assert result.stdout == "HELLO\n" and result.stderr == ""
    assert not result.timed_out and not result.stdout_truncated
    assert result.isolation["network"] in ("netns", "audit_hook")


def test_exit_code_and_traceback_are_reported():
    result = run_python_sync("import sys\nprint('x')\nsys.exit(3)\n", "", SMALL)
    assert result.exit_code == 3 and not result.ok
    crash = run_python_sync("def f():\n    return 1 / 0\nf()\n", "", SMALL)
    assert crash.exit_code == 1
    assert "ZeroDivisionError" in crash.stderr and 'File "main.py", line 2' in crash.stderr


def test_syntax_error_is_a_runtime_failure_not_a_crash():
    result = run_python_sync("def f(:\n", "", SMALL)
    assert result.exit_code == 1 and "SyntaxError" in result.stderr


def test_infinite_loop_hits_the_cpu_limit():
    result = run_python_sync("while True:\n    pass\n", "", SMALL)
    assert result.timed_out and not result.ok
    assert result.timeout_kind in ("cpu", "wall")


def test_sleeping_program_hits_the_wall_limit():
    result = run_python_sync("import time\ntime.sleep(60)\n", "", SMALL.with_(wall_seconds=1))
    assert result.timed_out and result.timeout_kind == "wall" and result.signal is not None


def test_memory_hog_is_stopped():
    result = run_python_sync("x = bytearray(4 * 1024 ** 3)\nprint(len(x))\n", "", SMALL)
    assert result.memory_exceeded and not result.ok and result.stdout == ""


@pytest.mark.parametrize("code", [
    "import os\nwhile True:\n    os.fork()\n",
    "import subprocess\nsubprocess.run(['sh', '-c', ':(){ :|:& };:'])\n",
    "import multiprocessing\nps = [multiprocessing.Process(target=print) for _ in range(1000)]\n[p.start() for p in ps]\n",
])
def test_fork_bomb_is_contained(code):
    result = run_python_sync(code, "", SMALL.with_(wall_seconds=3))
    assert not result.ok
    assert result.exit_code != 0 or result.timed_out


@pytest.mark.parametrize("where", ["tmp_path", "tmp"])
def test_writing_outside_the_workdir_fails(tmp_path: Path, where: str):
    target = tmp_path / "outside.txt" if where == "tmp_path" else Path("/tmp") / f"mpb-sandbox-escape-{uuid.uuid4().hex}"
    code = f"with open({str(target)!r}, 'w') as f:\n    f.write('escaped')\n"
    try:
        result = run_python_sync(code, "", SMALL)
        assert not result.ok and "PermissionError" in result.stderr
        assert not target.exists()
    finally:
        if target.exists():
            target.unlink()


def test_writing_inside_the_workdir_works_and_the_workdir_is_removed():
    code = "import os\nopen('data.txt', 'w').write('ok')\nprint(os.getcwd())\nprint(open('data.txt').read())\n"
    result = run_python_sync(code, "", SMALL)
    assert result.ok, result.stderr
    workdir, content = result.stdout.split()
    assert content == "ok"
    assert not Path(workdir).exists()


def _listener() -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.setblocking(False)
    return server


@pytest.mark.parametrize("isolation", [None, FALLBACK], ids=["probed", "audit_hook_fallback"])
def test_network_socket_to_localhost_fails(isolation):
    server = _listener()
    try:
        port = server.getsockname()[1]
        code = (f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "s.sendall(b'leak')\nprint('connected')\n")
        result = run_python_sync(code, "", SMALL, isolation=isolation)
        assert not result.ok and "connected" not in result.stdout
        with pytest.raises(BlockingIOError):
            server.accept()
        if isolation is FALLBACK:
            assert result.isolation["network"] == "audit_hook" and "PermissionError" in result.stderr
    finally:
        server.close()


def test_environment_secrets_are_not_visible(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("HF_TOKEN", "hf-secret")
    result = run_python_sync("import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))\n", "", SMALL)
    assert result.ok
    assert "sk-test-secret" not in result.stdout and "OPENAI_API_KEY" not in result.stdout
    assert "HF_TOKEN" not in result.stdout


def test_huge_output_is_truncated_and_stopped():
    result = run_python_sync("while True:\n    print('x' * 1000)\n", "", SMALL.with_(output_bytes=10_000))
    assert result.output_limit_exceeded and result.stdout_truncated and not result.ok
    assert len(result.stdout) == 10_000


def test_huge_stderr_is_truncated():
    result = run_python_sync("import sys\nsys.stderr.write('e' * 100000)\n", "", SMALL.with_(output_bytes=1000))
    assert result.stderr_truncated and len(result.stderr) == 1000


def test_limits_reject_nonsense():
    with pytest.raises(ValueError):
        SandboxLimits(wall_seconds=0)


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
