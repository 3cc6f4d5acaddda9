"""Which OS-level isolation this machine offers the sandbox, probed once per process.

Network: `unshare --net` (plus `--user --map-root-user` when not root) puts the program in an empty network
namespace, and `--pid --fork --kill-child` in its own PID namespace (everything dies with it). When that is
unavailable the child falls back to an audit hook that refuses socket creation; `Isolation.network` records
which mode applied ("netns" or "audit_hook").

User: when the engine runs as root, the program runs as an unprivileged uid (default 65534, override with
SANDBOX_UID) if that uid can start the interpreter; otherwise it stays root and relies on the audit hooks
(recorded in `Isolation.user`). RLIMIT_NPROC does not bind root, so process creation is also refused by the
audit hook.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass

_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Isolation:
    prefix: tuple[str, ...]
    network: str  # "netns" | "audit_hook"
    uid: int | None  # uid to run as (only when the engine is root), else None
    gid: int | None
    user: str  # human description

    def as_dict(self) -> dict[str, str]:
        return {"network": self.network, "user": self.user}


_lock = threading.Lock()
_cached: Isolation | None = None


def _works(cmd: list[str], uid: int | None, gid: int | None) -> bool:
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=_PROBE_TIMEOUT, user=uid, group=gid, extra_groups=[] if uid is not None else None,
                              cwd="/", env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def probe(force_fallback: bool = False) -> Isolation:
    """Probe (or return the cached) isolation. `force_fallback` skips namespaces (used by tests)."""
    global _cached
    if force_fallback:
        return Isolation(prefix=(), network="audit_hook", uid=None, gid=None, user=_user_label(None))
    with _lock:
        if _cached is None:
            _cached = _probe()
        return _cached


def _user_label(uid: int | None) -> str:
    if uid is not None:
        return f"uid {uid}"
    return "root (no drop possible)" if os.geteuid() == 0 else f"same user (uid {os.geteuid()})"


def _probe() -> Isolation:
    uid = gid = None
    python = [sys.executable, "-I", "-S", "-c", "pass"]
    if os.geteuid() == 0:
        candidate = int(os.environ.get("SANDBOX_UID", "65534"))
        if _works(python, candidate, candidate):
            uid = gid = candidate
    unshare = shutil.which("unshare")
    if unshare:
        base = [unshare, "--net", "--pid", "--fork", "--kill-child"]
        options = [base] if os.geteuid() == 0 and uid is None else []
        options.append([unshare, "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child"])
        for prefix in options:
            if _works(prefix + python, uid, gid):
                return Isolation(prefix=tuple(prefix), network="netns", uid=uid, gid=gid, user=_user_label(uid))
    return Isolation(prefix=(), network="audit_hook", uid=uid, gid=gid, user=_user_label(uid))
