"""Repository checkouts for the SWE agents' tools (protocol-v1 section 10: clone the repo at the base commit;
Single/Independent replicas and Decentralized peers each edit their own clone; the patch is `git diff HEAD` of
the checkout).

Sources: `--swe-repos DIR` holds local git mirrors named `<owner>__<name>` (optionally with `.git`), e.g.
`django__django.git` from `git clone --mirror https://github.com/django/django DIR/django__django.git`. Nothing is
fetched from the network. One checkout belongs to (rollout attempt, member) - the agent scope the topology sets -
and is removed when that attempt's context is garbage collected or the process ends. Its layout, under one
temporary root per workspace (inside one per process, which the jail exposes once for a whole sweep):

    <root>/<row>-<n>-m<member>/git    the clone's git directory (`--shared`: objects borrowed from the mirror);
                                      the engine's, read-only inside the jail
    <root>/<row>-<n>-m<member>/tree   the work tree at the base commit, owned by the jail's uid (65534 when the
                                      engine is root): the only host path a tool may write (tool_jail.py)

The engine runs git itself only on paths it chose, before any model touches them (clone, checkout). Everything
after - every tool call and the scored patch - runs inside the jail, so a planted `core.hooksPath`, hook, symlink
or `.git` of the model's never runs as the engine's user. Git and the jail run in a worker thread, never on the
event loop.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import anyio

from core.errors import DataError
from core.models import Row
from core.topology import CURRENT_AGENT

from benchmarks.sandbox.isolation import Isolation, isolation_for_run, probe
from benchmarks.sandbox.jail import JailUnavailable, plan_jail

GIT_TIMEOUT_S = 600.0


def git(args: list[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT_S) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "GIT_TERMINAL_PROMPT": "0",
                               "HOME": str(cwd or "/"), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    if proc.returncode != 0:
        raise DataError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


@dataclass(frozen=True)
class Checkout:
    """One member's checkout and the jail its tools run in (`isolation.plan` None: the unsafe mode)."""

    tree: Path
    git_dir: Path
    mirrors: Path
    isolation: Isolation

    @property
    def jailed(self) -> bool:
        return self.isolation.plan is not None


class RepoWorkspaces:
    def __init__(self, repos_dir: str | Path) -> None:
        self.repos_dir = Path(repos_dir).expanduser().resolve()
        if not self.repos_dir.is_dir():
            raise DataError(f"--swe-repos {self.repos_dir} is not a directory of git mirrors")
        if shutil.which("git") is None:
            raise DataError("--swe-repos needs the git executable on PATH")
        self.root = Path(tempfile.mkdtemp(prefix="ws-", dir=process_root())).resolve()
        os.chmod(self.root, 0o711)  # the jail's uid reaches its own checkout; nobody can list the root
        # keyed by id() (contexts need not be hashable); a finalizer drops the entry and the clones with the context
        self._by_rollout: dict[int, dict[int, Checkout]] = {}
        self._lock = threading.Lock()
        self._count = 0
        self._isolation: Isolation | None = None

    def isolation(self) -> Isolation:
        """The jail for this workspace's checkouts and mirrors (built once); without a jail, the unsafe mode when
        the context allowed it, else SandboxUnavailable."""
        with self._lock:
            if self._isolation is None:
                iso = probe()
                if not iso.available:
                    self._isolation = isolation_for_run()
                else:
                    try:
                        # one pinned namespace per (mirrors, process root): a sweep's SWE jobs share it
                        plan = plan_jail((str(self.repos_dir), str(process_root())))
                    except JailUnavailable as exc:
                        raise DataError(f"the SWE tools' jail cannot expose --swe-repos: {exc}") from exc
                    self._isolation = Isolation(kind="bwrap", available=True, reason=iso.reason, plan=plan)
            return self._isolation

    def mirror(self, repo: str) -> Path:
        stem = repo.replace("/", "__")
        for name in (stem, f"{stem}.git"):
            if (self.repos_dir / name).exists():
                return self.repos_dir / name
        raise DataError(f"no local mirror of {repo} in --swe-repos {self.repos_dir} (expected {stem} or "
                        f"{stem}.git)")

    def _checkout_sync(self, row: Row, rollout: object, member: int) -> Checkout:
        iso = self.isolation()
        with self._lock:
            owned = self._by_rollout.get(id(rollout))
            if owned is None:
                owned = {}
                self._by_rollout[id(rollout)] = owned
                weakref.finalize(rollout, self._forget, id(rollout))
            if member in owned:
                return owned[member]
            self._count += 1
            home = self.root / f"{row.id}-{self._count}-m{member}"
            home.mkdir(mode=0o755)
            done = Checkout(tree=home / "tree", git_dir=home / "git", mirrors=self.repos_dir, isolation=iso)
            owned[member] = done
        mirror = self.mirror(str(row.task["repo"]))
        if done.jailed:
            require_readable(mirror, done.isolation)
        git(["clone", "--quiet", "--shared", "--no-checkout", f"--separate-git-dir={done.git_dir}", str(mirror),
             str(done.tree)])
        git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", str(row.task["base_commit"])],
            cwd=done.tree)
        if done.jailed:
            hand_over(done)
        return done

    async def checkout(self, row: Row) -> Checkout:
        """The clone of the calling agent (its rollout attempt and member), created on first use."""
        scope = CURRENT_AGENT.get()
        if scope is None:
            raise RuntimeError("SWE repository tools called outside an agent scope")
        return await anyio.to_thread.run_sync(self._checkout_sync, row, scope.rollout, scope.member)

    def existing(self) -> Checkout | None:
        scope = CURRENT_AGENT.get()
        if scope is None:
            return None
        with self._lock:
            return self._by_rollout.get(id(scope.rollout), {}).get(scope.member)

    def _forget(self, key: int) -> None:
        with self._lock:
            owned = self._by_rollout.pop(key, {})
        for done in owned.values():
            shutil.rmtree(done.tree.parent, ignore_errors=True)


_root_lock = threading.Lock()
_process_root: list[Path] = []


def process_root() -> Path:
    """This process's directory of SWE workspaces (created on first use, removed at exit)."""
    with _root_lock:
        if not _process_root:
            root = Path(tempfile.mkdtemp(prefix="mpb-swe-")).resolve()
            os.chmod(root, 0o711)
            atexit.register(shutil.rmtree, root, True)
            _process_root.append(root)
        return _process_root[0]


def hand_over(done: Checkout) -> None:
    """Before the first tool call: the work tree's `.git` link becomes the empty mount point of the read-only git
    directory, and the tree is handed to the jail's uid (when the engine is root)."""
    (done.tree / ".git").unlink()
    (done.tree / ".git").mkdir()
    assert done.isolation.plan is not None
    uid = done.isolation.plan.host_uid
    if uid == os.geteuid():
        return
    for dirpath, dirnames, filenames in os.walk(done.tree):
        os.lchown(dirpath, uid, uid)
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, uid)


def require_readable(mirror: Path, iso: Isolation) -> None:
    """The jail's uid reads the clone's borrowed objects from the mirror: refuse one it cannot read."""
    assert iso.plan is not None
    if iso.plan.host_uid == os.geteuid():
        return
    objects = mirror / "objects"
    for path in (mirror, objects, objects / "pack", *sorted((objects / "pack").glob("*"))):
        mode = path.stat().st_mode if path.exists() else 0o777
        need = 0o005 if path.is_dir() else 0o004
        if mode & need != need:
            raise DataError(f"the SWE tools' jail (uid {iso.plan.host_uid}) cannot read the mirror {mirror} "
                            f"({path} is mode {oct(mode & 0o777)}); make it readable: chmod -R o+rX {mirror}")
