"""Engine running as root: how the jail is entered as uid 65534 (never as root).

The interpreter may live under a mode-700 home (/root/.pyenv/...) that uid 65534 cannot traverse, and the jail
must be entered AFTER dropping to 65534. So, once per process:

1. `unshare --mount --propagation private` starts a short-lived root helper in a new, private mount namespace;
   it bind-mounts the interpreter prefixes (and bwrap's own directory) onto empty, root-owned, world-traversable
   mount points (`/tmp/mpb-jail-*/N`) that are mounts ONLY in that namespace: the host's mount table is never
   touched and root's files never become readable on the host;
2. the engine keeps an fd to that namespace (/proc/<helper>/ns/mnt) and lets the helper exit: the fd alone
   keeps the namespace and its mounts alive.

Per execution: `nsenter --mount=/proc/self/fd/N --setuid 65534 --setgid 65534` (supplementary groups cleared,
no capabilities left) execs bwrap from the mount point, and bwrap binds the mount points back at the original
paths inside the jail. One extra exec per execution instead of four (unshare, sh, mount, setpriv).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

JAIL_UID = 65534
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Runs as root in the new mount namespace: "$1" = mount binary, then (source, mount point) pairs. Arguments are
# passed positionally, never interpolated. It reports "ready" and waits for its stdin to close.
_MOUNT_SCRIPT = ('m=$1; shift; while [ $# -gt 1 ]; do "$m" --bind "$1" "$2" || exit 125; shift 2; done; '
                 'echo ready; read _')
_SETUP_TIMEOUT = 20.0


class JailUnavailable(Exception):
    """The jail cannot be built on this machine; the message says why and how to fix it."""


@dataclass(frozen=True)
class RootLaunch:
    launcher: tuple[str, ...]  # nsenter ... --
    keep_fds: tuple[int, ...]  # the namespace fd, passed to each launch
    points: dict[str, str]  # host source -> its mount point inside the namespace


_lock = threading.Lock()
_pinned: dict[tuple[str, ...], RootLaunch] = {}


def _tool(name: str) -> str:
    found = shutil.which(name, path=SYSTEM_PATH)
    if not found:
        raise JailUnavailable(f"`{name}` (util-linux) is needed to drop from root to uid {JAIL_UID} before entering "
                              f"the jail; install util-linux, or run the engine as an ordinary user")
    return found


def _mount_points(count: int) -> list[str]:
    base = tempfile.mkdtemp(prefix="mpb-jail-", dir="/tmp" if os.path.isdir("/tmp") else None)
    os.chmod(base, 0o755)
    atexit.register(shutil.rmtree, base, True)
    parts = os.path.realpath(base).split("/")
    for depth in range(2, len(parts) + 1):
        if not os.stat("/".join(parts[:depth])).st_mode & 0o001:
            raise JailUnavailable(f"{base} is not traversable by uid {JAIL_UID}; set TMPDIR to a directory that is")
    points = [os.path.join(base, str(n)) for n in range(count)]
    for point in points:
        os.mkdir(point, 0o755)
    return points


def root_launch(sources: tuple[str, ...]) -> RootLaunch:
    """The pinned private mount namespace exposing `sources` (created on first use, then reused)."""
    with _lock:
        if sources not in _pinned:
            _pinned[sources] = _pin(sources)
        return _pinned[sources]


def _pin(sources: tuple[str, ...]) -> RootLaunch:
    unshare, sh, mount, nsenter = (_tool(n) for n in ("unshare", "sh", "mount", "nsenter"))
    points = _mount_points(len(sources))
    pairs = [item for pair in zip(sources, points) for item in pair]
    helper = subprocess.Popen([unshare, "--mount", "--propagation", "private", "--", sh, "-c", _MOUNT_SCRIPT, "sh",
                               mount, *pairs], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={}, cwd="/")
    assert helper.stdin is not None and helper.stdout is not None
    try:
        ready = helper.stdout.readline()
        if ready.strip() != b"ready":
            helper.wait(timeout=_SETUP_TIMEOUT)
            detail = (helper.stderr.read() if helper.stderr else b"").decode("utf-8", "replace").strip()
            raise JailUnavailable(f"could not prepare the private mount namespace for the jail "
                                  f"({detail or 'no output'}); root needs CAP_SYS_ADMIN for it, or run the engine "
                                  f"as an ordinary user")
        fd = os.open(f"/proc/{helper.pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.stdin.close()
        helper.wait(timeout=_SETUP_TIMEOUT)
        helper.stdout.close()
        if helper.stderr is not None:
            helper.stderr.close()
    launcher = (nsenter, f"--mount=/proc/self/fd/{fd}", f"--setuid={JAIL_UID}", f"--setgid={JAIL_UID}", "--")
    return RootLaunch(launcher=launcher, keep_fds=(fd,), points=dict(zip(sources, points)))
