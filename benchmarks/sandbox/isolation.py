"""Which isolation model-written code gets, and the rule that there is no silent fallback.

    probe()                 the isolation of this process (built and tried once, then cached)
    check()                 the same, built and tried afresh (for `python -m engine sandbox check`)
    isolation_for_run()     the jail; without one, SandboxUnavailable -- unless the caller's context allowed
                            the unsafe mode (`allow_unsafe_sandbox()`, set by `--unsafe-sandbox`)

The only safe isolation is the bubblewrap jail (jail.py). "unsafe" is a bare subprocess with rlimits and an
empty environment: it exists for machines without user namespaces and only when the user asked for it; a job
that uses it is marked non-conformant. The in-process audit hook of earlier versions is gone: anything inside
the program's own interpreter can be switched off by the program, so it was never a boundary.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from contextvars import ContextVar
from dataclasses import dataclass

from core.errors import UsageError

from benchmarks.sandbox.jail import JAIL_UID, JailPlan, JailUnavailable, jail_argv, plan_jail

_PROBE_TIMEOUT = 20.0
FIX_HINT = ("pass --unsafe-sandbox to run it without a jail anyway (the job is then marked non-conformant)")


class SandboxUnavailable(UsageError):
    """Model-written code would have to run without the jail and the user did not allow it."""

    kind = "sandbox_unavailable"


@dataclass(frozen=True)
class Isolation:
    kind: str  # "bwrap" | "unsafe"
    available: bool  # the jail was built and a trial program ran in it
    reason: str  # why the jail is (not) available, and how to fix it
    plan: JailPlan | None = None

    @property
    def program_uid(self) -> int:
        """uid the program has on the host (the engine's own in the unsafe mode)."""
        return self.plan.host_uid if self.plan is not None else os.geteuid()

    def as_dict(self) -> dict[str, str]:
        if self.kind == "bwrap" and self.plan is not None:
            return {"kind": "bwrap", "network": "none (empty network namespace)",
                    "user": f"uid {JAIL_UID} in the jail, uid {self.plan.host_uid} on the host",
                    "launch": "root: private mount namespace, dropped to 65534, then bwrap" if self.plan.launcher
                    else "bwrap"}
        return {"kind": "unsafe", "network": "host network", "user": f"uid {os.geteuid()} (the engine's own)",
                "launch": "bare subprocess (--unsafe-sandbox)"}


UNSAFE = Isolation(kind="unsafe", available=False, reason="no jail: bare subprocess with rlimits (--unsafe-sandbox)")
_lock = threading.Lock()
_cached: Isolation | None = None
_unsafe_allowed: ContextVar[bool] = ContextVar("mpb_unsafe_sandbox", default=False)


def allow_unsafe_sandbox(allowed: bool = True) -> None:
    """Allow the unsafe mode for the current context (the job's task and everything it starts)."""
    _unsafe_allowed.set(allowed)


def unsafe_allowed() -> bool:
    return _unsafe_allowed.get()


def probe() -> Isolation:
    global _cached
    with _lock:
        if _cached is None:
            _cached = check()
        return _cached


def check() -> Isolation:
    """Build the jail and run a trial program in it; the reason names the failing step and the fix."""
    try:
        plan = plan_jail()
    except JailUnavailable as exc:
        return Isolation(kind="bwrap", available=False, reason=str(exc))
    code_r = code_fd(b"import os\nprint(os.getuid())\n")
    argv = jail_argv(plan, [sys.executable, "-I", "-S", "/work/main.py"], code_fd=code_r, tmpfs_bytes=1 << 20,
                     env={})
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_TIMEOUT,
                              pass_fds=(code_r, *plan.keep_fds), env={}, cwd="/",
                              start_new_session=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return Isolation(kind="bwrap", available=False, reason=f"bwrap could not be started: {exc}")
    finally:
        os.close(code_r)
    if done.returncode != 0 or done.stdout.strip() != str(JAIL_UID).encode():
        detail = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        return Isolation(kind="bwrap", available=False, reason=_explain(detail[0]))
    how = "root drops to uid 65534 (nsenter), then bwrap" if plan.launcher else "bwrap as the engine's user"
    return Isolation(kind="bwrap", available=True, reason=f"bubblewrap jail works ({how}; {plan.bwrap})", plan=plan)


def code_fd(source: bytes) -> int:
    """An anonymous file holding `source`, positioned at its start (bwrap copies it to /work/main.py)."""
    fd = os.memfd_create("main.py", 0)
    try:
        view = memoryview(source)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd


def _explain(detail: str) -> str:
    lowered = detail.lower()
    if "uid map" in lowered or "namespace" in lowered or "operation not permitted" in lowered:
        return (f"the jail needs unprivileged user namespaces, which this machine refuses ({detail}); enable them "
                f"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0, or the AppArmor/"
                f"container policy that blocks them)")
    return f"the bubblewrap jail failed its trial run ({detail})"


def isolation_for_run() -> Isolation:
    """The jail, or UNSAFE when the context allowed it; otherwise SandboxUnavailable (never a silent fallback)."""
    iso = probe()
    if iso.available:
        return iso
    if unsafe_allowed():
        return UNSAFE
    raise SandboxUnavailable(f"model-written code cannot be jailed: {iso.reason}; fix that, or {FIX_HINT}")


def require_jail_or_unsafe(unsafe: bool) -> str | None:
    """Called before a code benchmark starts: None when the jail works; the warning line when `unsafe` lets the
    job go on without it; raises SandboxUnavailable otherwise."""
    iso = probe()
    if iso.available:
        return None
    if not unsafe:
        raise SandboxUnavailable(f"model-written code cannot be jailed: {iso.reason}; fix that, or {FIX_HINT}")
    return (f"warning: --unsafe-sandbox: model-written code runs WITHOUT a jail as uid {os.geteuid()} "
            f"({iso.reason}); the job is marked non-conformant")
