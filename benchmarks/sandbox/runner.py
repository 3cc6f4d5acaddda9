"""Run one model-written Python program in a fresh, limited, throw-away jail.

Each execution: the bubblewrap jail of jail.py (uid 65534, no host files, no network, empty environment, a
private tmpfs /work holding only main.py), the interpreter in isolated mode (`-I`, `-B`), the child bootstrap
(`_bootstrap.py`) applying the rlimits before any program code runs, a new session so the parent can kill the
whole process group at the wall deadline (the jail dies with it: `--die-with-parent` and its PID namespace),
and capped output capture. Without a jail the call raises SandboxUnavailable unless the caller's context
allowed the unsafe mode (a bare subprocess in a temporary directory; see isolation.py).

Limits are applied by the bootstrap inside the child (resource.setrlimit) rather than by `preexec_fn`: the
async path runs this function in worker threads, and `preexec_fn` is not safe in a threaded parent.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.sandbox.isolation import Isolation, code_fd, isolation_for_run
from benchmarks.sandbox.jail import CODE_PROFILE, WORKDIR, JailProfile, jail_argv
from benchmarks.sandbox.limits import SandboxLimits, SandboxResult

_BOOTSTRAP = (Path(__file__).with_name("_bootstrap.py")).read_text(encoding="utf-8")
_MEMORY_RE = re.compile(r"^(MemoryError|numpy\.core\._exceptions\._ArrayMemoryError|.*Unable to allocate)", re.M)
_READ_CHUNK = 65536
_STATUS_BYTES = 4096
MIN_TMPFS_BYTES = 8 * 1024 * 1024


def scrubbed_env(workdir: str) -> dict[str, str]:
    """The only environment the program sees: constants, nothing inherited (no API keys, tokens, paths)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _rlimits(limits: SandboxLimits) -> list[tuple[str, int, int]]:
    cpu = max(1, int(limits.cpu_seconds + 0.999))
    return [
        ("RLIMIT_CPU", cpu, cpu + 1),
        ("RLIMIT_AS", limits.memory_bytes, limits.memory_bytes),
        ("RLIMIT_FSIZE", limits.file_size_bytes, limits.file_size_bytes),
        ("RLIMIT_NPROC", limits.max_processes, limits.max_processes),
        ("RLIMIT_NOFILE", limits.max_open_files, limits.max_open_files),
        ("RLIMIT_CORE", 0, 0),
    ]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def site_dirs() -> list[str]:
    """The interpreter's site-packages directories (put on the program's sys.path when limits.site_packages)."""
    paths = sysconfig.get_paths()
    dirs: list[str] = []
    for key in ("purelib", "platlib"):
        path = paths.get(key)
        if path and os.path.isdir(path) and path not in dirs:
            dirs.append(path)
    return dirs


def _inner(limits: SandboxLimits, status_w: int, workdir: str) -> list[str]:
    # `-S`: no site hooks (.pth files) run in the program's interpreter; the bootstrap puts the site-packages
    # directories on sys.path itself when the limits allow them (same imports, ~90 ms less per execution here)
    config = {"rlimits": _rlimits(limits), "status_fd": status_w, "workdir": workdir,
              "site_dirs": site_dirs() if limits.site_packages else []}
    return [sys.executable, "-I", "-B", "-S", "-X", "utf8", "-c", _BOOTSTRAP, json.dumps(config)]


def run_python_sync(code: str, stdin: str = "", limits: SandboxLimits | None = None, *,
                    isolation: Isolation | None = None, profile: JailProfile = CODE_PROFILE) -> SandboxResult:
    """Run `code` as __main__ with `stdin`; blocks until it exits or a limit stops it. Never raises for
    anything the program does; raises SandboxUnavailable when there is no jail (and the unsafe mode was not
    allowed), OSError only when a process cannot be started at all. `profile` adds a kind's mounts to the jail
    (benchmarks/swe/tool_jail.py); the unsafe mode has no mounts to add."""
    limits = limits or SandboxLimits()
    iso = isolation or isolation_for_run()
    started = time.monotonic()
    status_r, status_w = os.pipe()
    proc: subprocess.Popen[bytes] | None = None
    workdir: str | None = None
    fds = [status_w]
    try:
        if iso.plan is not None:
            fds.append(code_fd(code.encode("utf-8")))
            tmpfs = max(MIN_TMPFS_BYTES, 2 * limits.file_size_bytes)
            argv = jail_argv(iso.plan, _inner(limits, status_w, WORKDIR), code_fd=fds[1], tmpfs_bytes=tmpfs,
                             env=scrubbed_env(WORKDIR), profile=profile)
            cwd, env = "/", {}
            keep = iso.plan.keep_fds
        else:
            workdir = tempfile.mkdtemp(prefix="mpb-sandbox-")
            Path(workdir, "main.py").write_text(code, encoding="utf-8")
            argv, cwd, env = _inner(limits, status_w, workdir), workdir, scrubbed_env(workdir)
            keep = ()
        with tempfile.TemporaryFile() as stdin_file:
            stdin_file.write(stdin.encode("utf-8"))
            stdin_file.seek(0)
            proc = subprocess.Popen(argv, stdin=stdin_file, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=cwd, env=env, start_new_session=True, pass_fds=(*fds, *keep), close_fds=True)
        for fd in fds:
            os.close(fd)
        fds = []
        return _collect(proc, status_r, limits, iso, started)
    finally:
        if proc is not None:
            _kill_group(proc.pid)
            if proc.poll() is None:
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        for fd in [status_r, *fds]:
            try:
                os.close(fd)
            except OSError:
                pass
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


@dataclass
class _Streams:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    status: bytearray = field(default_factory=bytearray)
    truncated: dict[str, bool] = field(default_factory=lambda: {"stdout": False, "stderr": False})
    timed_out: bool = False
    over_output: bool = False


def _pump(proc: subprocess.Popen[bytes], status_r: int, limits: SandboxLimits, deadline: float) -> _Streams:
    """Read stdout, stderr and the status pipe until all close, a cap is hit or the deadline passes."""
    assert proc.stdout is not None and proc.stderr is not None
    got = _Streams()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    sel.register(status_r, selectors.EVENT_READ, "status")
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                got.timed_out = True
                _kill_group(proc.pid)
                break
            for key, _ in sel.select(timeout=remaining):
                name = key.data
                chunk = os.read(key.fd, _READ_CHUNK)
                buf: bytearray = getattr(got, name)
                if not chunk:
                    sel.unregister(key.fileobj)
                    if name == "status":  # the program itself has exited: anything still holding a pipe is a stray
                        _kill_group(proc.pid)
                elif name == "status" and len(buf) + len(chunk) > _STATUS_BYTES:
                    # the report is ~30 bytes; a flood means the program reached the pipe: the report is void
                    sel.unregister(key.fileobj)
                    buf[:] = b"flooded"
                elif name != "status" and len(buf) + len(chunk) > limits.output_bytes:
                    buf += chunk[: limits.output_bytes - len(buf)]
                    got.truncated[name] = True
                    if not got.over_output:
                        got.over_output = True
                        _kill_group(proc.pid)
                else:
                    buf += chunk
    finally:
        sel.close()
    return got


def _exit_status(raw_status: bytes, returncode: int | None) -> tuple[int | None, int | None]:
    """(exit code, signal) from the bootstrap's report, else from the launcher's own return code."""
    status = _parse_status(raw_status)
    if status is not None:
        if os.WIFSIGNALED(status):
            return None, os.WTERMSIG(status)
        return (os.WEXITSTATUS(status) if os.WIFEXITED(status) else None), None
    if returncode is not None and returncode < 0:
        return None, -returncode
    return returncode, None


def _collect(proc: subprocess.Popen[bytes], status_r: int, limits: SandboxLimits, iso: Isolation,
             started: float) -> SandboxResult:
    deadline = started + limits.wall_seconds
    got = _pump(proc, status_r, limits, deadline)
    try:
        proc.wait(timeout=max(0.5, deadline - time.monotonic() + 1.0))
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
    wall = time.monotonic() - started
    exit_code, sig = _exit_status(bytes(got.status), proc.returncode)
    stdout = bytes(got.stdout).decode("utf-8", errors="replace")
    stderr = bytes(got.stderr).decode("utf-8", errors="replace")
    timed_out, timeout_kind = got.timed_out, ("wall" if got.timed_out else None)
    if not timed_out and sig == signal.SIGXCPU:  # only RLIMIT_CPU sends SIGXCPU
        timed_out, timeout_kind = True, "cpu"
    memory = bool(_MEMORY_RE.search(stderr)) and not timed_out
    return SandboxResult(
        exit_code=exit_code, signal=sig, timed_out=timed_out, memory_exceeded=memory,
        output_limit_exceeded=got.over_output, stdout=stdout, stderr=stderr,
        stdout_truncated=got.truncated["stdout"], stderr_truncated=got.truncated["stderr"], wall_seconds=wall,
        timeout_kind=timeout_kind, isolation=iso.as_dict(), program_uid=iso.program_uid,
    )


def _parse_status(raw: bytes) -> int | None:
    if not raw:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))["wait_status"]
    except (ValueError, KeyError, TypeError):
        return None
    return value if isinstance(value, int) else None

