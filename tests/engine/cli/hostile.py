"""Helpers for hostile-input tests: run the real CLI in a subprocess, snapshot directories, tiny HTTP servers."""

from __future__ import annotations

import asyncio
import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aiohttp import web

ROOT = Path(__file__).resolve().parents[3]
BFCL_SINGLE = "task=bfcl,topology=single"


def engine(*args: str, env: dict[str, str] | None = None, timeout: float = 240,
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`python -m engine ARGS` with this tree first on PYTHONPATH; `env` entries override (None values drop)."""
    merged = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "REFLECTION_API_KEY",
                                                                "TASK_ENDPOINTS", "VLLM_BASE_URL", "MODEL_ID",
                                                                "REFLECTION_MODEL_BASE_URL")}
    merged["PYTHONPATH"] = os.pathsep.join([str(ROOT), merged.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    merged.update(env or {})
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=merged)


def job(out: Path, *extra: str, cell: str = BFCL_SINGLE, method: str = "identity",
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return engine("job", "--cell", cell, "--method", method, "--seed", "0", "--out", str(out), "--quiet", *extra,
                  env=env)


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every path under `root` (root included) -> (sha256 of its bytes or 'dir', mode)."""
    if not root.exists():
        return {}
    found: dict[str, tuple[str, int]] = {".": ("dir", root.stat().st_mode)}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_dir():
            found[rel] = ("dir", path.stat().st_mode)
        elif path.is_file():
            found[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mode)
        else:
            found[rel] = ("other", path.lstat().st_mode)
    return found


def assert_refused(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2, exactly one stderr line starting `error:` (or `<cmd>: error:`), no traceback, nothing on stdout."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "error" in lines[0], proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert proc.stdout == "", proc.stdout
    return lines[0]


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@contextmanager
def tiny_server(chat: Handler, models: Handler | None = None) -> Iterator[str]:
    """A real aiohttp server on 127.0.0.1 (its own thread and loop) with the given chat-completions handler;
    yields its base URL (`.../v1`)."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, object] = {}

    async def default_models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "m", "object": "model"}]})

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
        app.router.add_get("/v1/models", models or default_models)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        box["runner"], box["port"] = runner, runner.addresses[0][1]

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{box['port']}/v1"
    finally:
        async def stop() -> None:
            await box["runner"].cleanup()  # type: ignore[attr-defined]

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
