"""The SWE repository tools run in the code benchmarks' bubblewrap jail (benchmarks/sandbox), with this profile.

Every tool call - shell_exec, file_read, file_write, str_replace, list_dir, search_repo - and the scored patch
(`git diff HEAD`) is one jailed execution of repo_tools.py as the program, its request on stdin. What it sees:

    read-only   /usr (the system's shell, git, coreutils and C libraries; /usr/local hidden), /bin and /lib as
                on the host, the engine's interpreter prefix (the repository's tests run with it; on PATH), the
                --swe-repos mirrors (the clone borrows their objects)
    read-write  /testbed: the member's work tree, owned by the jail's uid - the only writable host path
    read-only   /testbed/.git: the clone's git directory (no planted config or hook; a commit cannot hide the diff)
    private     a fresh /proc of its own PID namespace, a minimal /dev, size-capped /tmp, /dev/shm and /work
    nothing     else: no /etc (no passwd, no shadow), /root, /home, project sources, host /proc, host sockets,
                network or inherited environment

As uid 65534 (an engine running as root drops to it before entering), with the rlimits below, a wall deadline and
`--die-with-parent`: when the command's shell exits or is killed, the PID namespace dies with it, so nothing it
started (`setsid sleep 300 &`) outlives the call. Output is capped while it is read. Without a jail the tools run
as a bare subprocess only under --unsafe-sandbox (the job is then non-conformant), as the code benchmarks do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from benchmarks.sandbox import SandboxLimits, SandboxResult, run_python_sync
from benchmarks.sandbox.jail import JailPlan, JailProfile, Mount
from benchmarks.sandbox.limits import MIB
from benchmarks.swe import repo_tools
from benchmarks.swe.workspace import Checkout

JAIL_ROOT = "/testbed"
PROGRAM = Path(repo_tools.__file__).read_text(encoding="utf-8")
TOOL_LIMITS = SandboxLimits(cpu_seconds=repo_tools.SHELL_TIMEOUT_S, wall_seconds=repo_tools.SHELL_TIMEOUT_S,
                            memory_bytes=4096 * MIB, file_size_bytes=64 * MIB, max_processes=256,
                            max_open_files=1024, output_bytes=4 * MIB, site_packages=False)
PATCH_CAP_CHARS = 1_000_000


def _top_level(path: str) -> Mount:
    """/bin, /sbin, /lib... as on the host: the same link, or the directory read-only."""
    return ("--symlink", os.readlink(path), path) if os.path.islink(path) else ("--ro-bind", path, path)


def profile(plan: JailPlan, checkout: Checkout) -> JailProfile:
    before: list[Mount] = [("--ro-bind", "/usr", "/usr"), ("--size", "65536", "--tmpfs", "/usr/local")]
    before += [_top_level(p) for p in ("/bin", "/sbin") if os.path.lexists(p)]
    after: list[Mount] = [
        ("--ro-bind", plan.seen(str(checkout.mirrors)), str(checkout.mirrors)),
        ("--bind", plan.seen(str(checkout.tree)), JAIL_ROOT),
        ("--ro-bind", plan.seen(str(checkout.git_dir)), f"{JAIL_ROOT}/.git"),
    ]
    return JailProfile(before=tuple(before), after=tuple(after), chdir=JAIL_ROOT)


def execute(checkout: Checkout, tool: str, args: dict[str, Any], limits: SandboxLimits) -> SandboxResult:
    """One jailed execution of repo_tools.py (blocking)."""
    plan = checkout.isolation.plan
    request = {"tool": tool, "args": args, "root": JAIL_ROOT if plan is not None else str(checkout.tree)}
    jail = profile(plan, checkout) if plan is not None else JailProfile()
    return run_python_sync(PROGRAM, json.dumps(request), limits, isolation=checkout.isolation, profile=jail)


def _shell_text(result: SandboxResult, limits: SandboxLimits) -> str:
    cut = repo_tools._cut
    if result.timed_out:
        head = f"error: the command ran past {limits.wall_seconds:.0f} s and was stopped"
    elif result.exit_code is None:
        head = f"exit status: killed by {result.signal_name}"
    else:
        head = f"exit status: {result.exit_code}"
    if result.output_limit_exceeded:
        head += f"\nnote: the output passed {limits.output_bytes} bytes and the command was stopped"
    out = f"{head}\nstdout:\n{cut(result.stdout, repo_tools.OUTPUT_CHARS)}"
    if result.stderr:
        out += f"\nstderr:\n{cut(result.stderr, repo_tools.OUTPUT_CHARS // 2)}"
    return out


def run_repo_tool(checkout: Checkout, name: str, arguments: Any, limits: SandboxLimits | None = None) -> str:
    """Blocking (call it in a worker thread). Bad input comes back as an error text for the model. `limits`:
    TOOL_LIMITS unless given."""
    limits = limits or TOOL_LIMITS
    if name not in repo_tools.IMPLEMENTATIONS:
        return f"error: unknown tool {name!r}; tools are {', '.join(repo_tools.IMPLEMENTATIONS)}"
    args = arguments if isinstance(arguments, dict) else {}
    result = execute(checkout, name, args, limits)
    if name == "shell_exec" and not (result.ok and result.stdout.startswith("error: shell_exec")):
        return _shell_text(result, limits)
    if result.ok:
        return result.stdout
    return f"error: {name} failed: {result.describe()}: {result.stderr_tail(300)}".rstrip(": ")


async def call(checkout: Checkout, name: str, arguments: Any) -> str:
    # the default thread limiter, not the sandbox's per-core one: a command mostly waits, and a 120 s test run
    # must not hold back every other agent's file_read
    return await anyio.to_thread.run_sync(run_repo_tool, checkout, name, arguments)


async def patch(checkout: Checkout) -> tuple[str, str | None]:
    """(`git diff HEAD` of the checkout, None) or ("", why it could not be taken); run in the jail."""
    args = {} if checkout.jailed else {"git_dir": str(checkout.git_dir)}
    result = await anyio.to_thread.run_sync(execute, checkout, "checkout_patch", args, TOOL_LIMITS)
    if not result.ok or result.stdout.startswith("error: checkout_patch"):
        return "", (result.stdout if result.ok else result.describe())[:500]
    if len(result.stdout) > PATCH_CAP_CHARS:
        return "", f"the checkout's diff has {len(result.stdout)} characters (cap {PATCH_CAP_CHARS})"
    return result.stdout, None
