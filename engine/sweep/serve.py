"""`python -m engine sweep serve`: one OpenAI-compatible server per GPU, checked, listed, stopped on exit.

Default: vLLM (`python -m vllm.entrypoints.openai.api_server`) with the protocol's serving (section 5.4: one replica
per GPU from port 8000, 131,072 context) and `--generation-config vllm`, so that the model's
generation_config.json does not silently change the sampling the engine sends (anchors.md B.9). `--server-cmd`
replaces the command by a template with {model} {port} {gpu} {host} (tests use `python -m engine serve-sim`).
Each server runs in its own process group with CUDA_VISIBLE_DEVICES set to its GPU; readiness is a real 1-token
chat completion with the model id (engine/chat/preflight.py). The endpoint list goes to stdout (one base URL a
line) and, with --endpoints-file, to that file (atomically) for `sweep run --endpoints-file`. SIGINT/SIGTERM stop
every server (SIGTERM to its group, SIGKILL after a grace period) and remove the endpoints file.

Without --gpus it starts one server on the CPU: CUDA_VISIBLE_DEVICES is set empty (so a CUDA build sees no device),
`{gpu}` in a template is `cpu`, its log is server-cpu.log, and no nvidia-smi is asked (vLLM itself must then be a CPU
build; a llama.cpp or other CPU server comes through --server-cmd).
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from core.errors import UsageError
from engine.chat.preflight import Target, check_endpoints
from engine.args import StrictParser, int_in, positive_float

VLLM_FLAGS = ("--max-model-len", "131072", "--generation-config", "vllm")
STOP_GRACE_S = 15.0
CPU = "cpu"  # the one slot without --gpus


def make_parser() -> StrictParser:
    p = StrictParser(prog="engine sweep serve", description="Start one OpenAI-compatible server per GPU.")
    p.add_argument("--model", required=True, help="model id to serve (e.g. Qwen/Qwen3.5-9B)")
    p.add_argument("--gpus", default=None, help="comma list of GPU indices, one server each (default: one server "
                   "on the CPU, CUDA_VISIBLE_DEVICES empty, {gpu} = cpu)")
    p.add_argument("--base-port", type=int_in("--base-port", 0, 65535), default=8000,
                   help="port of the first server, +1 per GPU (default 8000; 0 = free ports)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--server-cmd", default=None, help="command template instead of vLLM, with {model} {port} "
                   "{gpu} {host}")
    p.add_argument("--endpoints-file", default=None, help="also write the endpoint list here")
    p.add_argument("--log-dir", default="serve-logs", help="each server's stdout/stderr (default serve-logs/)")
    p.add_argument("--startup-timeout", type=positive_float("--startup-timeout"), default=900.0,
                   help="seconds for every server to answer a chat completion (default 900: model loading)")
    return p


def gpu_list(text: str | None) -> list[str]:
    """The server slots: the GPU indices given, or the one CPU slot without --gpus."""
    if text is None:
        return [CPU]
    gpus = [g.strip() for g in text.split(",") if g.strip()]
    if not gpus or not all(g.isascii() and g.isdigit() for g in gpus) or len(set(gpus)) != len(gpus):
        raise UsageError(f"--gpus must be distinct GPU indices like 0,1,2,3, got {text!r}")
    return gpus


def label(gpu: str) -> str:
    return "server on the CPU" if gpu == CPU else f"server on GPU {gpu}"


def check_vllm_and_gpus(gpus: list[str]) -> None:
    """vLLM must be importable and every requested GPU visible to nvidia-smi (exit 2 otherwise)."""
    if importlib.util.find_spec("vllm") is None:
        raise UsageError("vLLM is not installed here (pip install vllm), or pass --server-cmd for another "
                         "OpenAI-compatible server")
    if gpus == [CPU]:
        return
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise UsageError("no NVIDIA GPU driver here (nvidia-smi not found); vLLM needs GPUs")
    out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30)
    present = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
    missing = [g for g in gpus if int(g) >= present]
    if out.returncode != 0 or missing:
        raise UsageError(f"GPU(s) {','.join(missing) or ','.join(gpus)} not present (nvidia-smi lists {present})")


def log_name(gpu: str) -> str:
    return "server-cpu.log" if gpu == CPU else f"server-gpu{gpu}.log"


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def command(template: str | None, model: str, port: int, gpu: str, host: str) -> list[str]:
    if template is None:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--host", host,
                "--port", str(port), *VLLM_FLAGS]
    try:
        return shlex.split(template.format(model=shlex.quote(model), port=port, gpu=gpu, host=host))
    except (KeyError, IndexError, ValueError) as exc:
        raise UsageError(f"--server-cmd: bad template ({type(exc).__name__}: {exc}); placeholders are "
                         "{model} {port} {gpu} {host}") from None


class Servers:
    """The started server processes (each its own process group)."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], gpu: str, log: Path) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "" if gpu == CPU else gpu}
        with open(log, "ab") as fh:
            try:
                self.procs.append(subprocess.Popen(argv, env=env, stdout=fh, stderr=subprocess.STDOUT,
                                                   stdin=subprocess.DEVNULL, start_new_session=True))
            except OSError as exc:
                raise UsageError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def wait_listening(urls: list[str], servers: Servers, gpus: list[str], timeout: float, log_dir: Path,
                   stop: threading.Event) -> None:
    """Until every server accepts TCP connections (model loading takes minutes); a server that exits is an error."""
    deadline = time.monotonic() + timeout
    pending = dict(zip(urls, zip(servers.procs, gpus)))
    while pending:
        for url, (proc, gpu) in list(pending.items()):
            if proc.poll() is not None:
                raise UsageError(f"the {label(gpu)} exited with {proc.returncode} before it was ready; see "
                                 f"{log_dir / log_name(gpu)}")
            host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
            with socket.socket() as sock:
                sock.settimeout(1.0)
                if sock.connect_ex((host, int(port))) == 0:
                    del pending[url]
        if stop.is_set():
            raise UsageError("interrupted while the servers were starting")
        if pending and time.monotonic() > deadline:
            raise UsageError(f"server(s) {', '.join(pending)} not listening after {timeout:g} s")
        if pending:
            time.sleep(0.2)


def serve_main(argv: Sequence[str]) -> int:
    args = make_parser().parse_args(list(argv))
    gpus = gpu_list(args.gpus)
    if args.server_cmd is None:
        check_vllm_and_gpus(gpus)
    ports = [free_port(args.host) if args.base_port == 0 else args.base_port + i for i in range(len(gpus))]
    if any(p > 65535 for p in ports):
        raise UsageError("--base-port + number of GPUs exceeds 65535")
    argvs = [command(args.server_cmd, args.model, port, gpu, args.host) for port, gpu in zip(ports, gpus)]
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    urls = [f"http://{args.host}:{port}/v1" for port in ports]
    servers, stop = Servers(), threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for argv_i, gpu in zip(argvs, gpus):
            servers.start(argv_i, gpu, log_dir / log_name(gpu))
        started = time.monotonic()
        wait_listening(urls, servers, gpus, args.startup_timeout, log_dir, stop)
        remaining = max(1.0, args.startup_timeout - (time.monotonic() - started))
        anyio.run(check_endpoints, [Target(u, args.model, None, label(g)) for u, g in zip(urls, gpus)],
                  remaining)
        listing = "".join(u + "\n" for u in urls)
        if args.endpoints_file:
            tmp = Path(args.endpoints_file + ".tmp")
            tmp.write_text(listing, encoding="utf-8")
            os.replace(tmp, args.endpoints_file)
        sys.stdout.write(listing)
        sys.stdout.flush()
        print(f"serve: {len(urls)} server(s) ready; Ctrl-C stops them", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            dead = [g for p, g in zip(servers.procs, gpus) if p.poll() is not None]
            if dead:
                raise UsageError(f"the {label(dead[0])} exited; see {log_dir}")
        return 0
    finally:
        servers.stop()
        if args.endpoints_file:
            Path(args.endpoints_file).unlink(missing_ok=True)
        for s, handler in previous.items():
            signal.signal(s, handler)
        print("serve: servers stopped", file=sys.stderr, flush=True)
