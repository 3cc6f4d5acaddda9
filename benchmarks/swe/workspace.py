"""Repository checkouts for the SWE agents' tools (protocol-v1 section 10: clone the repo at the base commit;
Single/Independent replicas and Decentralized peers each edit their own clone; the patch is `git diff HEAD` of
the checkout).

Sources: `--swe-repos DIR` holds local git mirrors named `<owner>__<name>` (optionally with `.git`), e.g.
`django__django.git` from `git clone --mirror https://github.com/django/django DIR/django__django.git`. Nothing is
fetched from the network. A checkout is a `git clone --shared --no-checkout` of the mirror, checked out detached at
the row's base commit, under one temporary root per process; it belongs to (rollout attempt, member) - the agent
scope the topology sets - and is removed when that attempt's context is garbage collected or the process ends.
Git runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import atexit
import shutil
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

import anyio

from core.errors import DataError
from core.models import Row
from core.topology import CURRENT_AGENT

GIT_TIMEOUT_S = 600.0


def git(args: list[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT_S) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "GIT_TERMINAL_PROMPT": "0",
                               "HOME": str(cwd or "/"), "GIT_CONFIG_NOSYSTEM": "1"})
    if proc.returncode != 0:
        raise DataError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


class RepoWorkspaces:
    def __init__(self, repos_dir: str | Path) -> None:
        self.repos_dir = Path(repos_dir).expanduser()
        if not self.repos_dir.is_dir():
            raise DataError(f"--swe-repos {self.repos_dir} is not a directory of git mirrors")
        if shutil.which("git") is None:
            raise DataError("--swe-repos needs the git executable on PATH")
        self.root = Path(tempfile.mkdtemp(prefix="mpb-swe-"))
        atexit.register(shutil.rmtree, self.root, True)
        # keyed by id() (contexts need not be hashable); a finalizer drops the entry and the clones with the context
        self._by_rollout: dict[int, dict[int, Path]] = {}
        self._lock = threading.Lock()
        self._count = 0

    def mirror(self, repo: str) -> Path:
        stem = repo.replace("/", "__")
        for name in (stem, f"{stem}.git"):
            if (self.repos_dir / name).exists():
                return self.repos_dir / name
        raise DataError(f"no local mirror of {repo} in --swe-repos {self.repos_dir} (expected {stem} or "
                        f"{stem}.git)")

    def _checkout_sync(self, row: Row, rollout: object, member: int) -> Path:
        with self._lock:
            owned = self._by_rollout.get(id(rollout))
            if owned is None:
                owned = {}
                self._by_rollout[id(rollout)] = owned
                weakref.finalize(rollout, self._forget, id(rollout))
            if member in owned:
                return owned[member]
            self._count += 1
            dest = self.root / f"{row.id}-{self._count}-m{member}"
            owned[member] = dest
        git(["clone", "--quiet", "--shared", "--no-checkout", str(self.mirror(str(row.task["repo"]))), str(dest)])
        git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", str(row.task["base_commit"])],
            cwd=dest)
        return dest

    async def checkout(self, row: Row) -> Path:
        """The clone of the calling agent (its rollout attempt and member), created on first use."""
        scope = CURRENT_AGENT.get()
        if scope is None:
            raise RuntimeError("SWE repository tools called outside an agent scope")
        return await anyio.to_thread.run_sync(self._checkout_sync, row, scope.rollout, scope.member)

    def existing(self) -> Path | None:
        scope = CURRENT_AGENT.get()
        if scope is None:
            return None
        with self._lock:
            return self._by_rollout.get(id(scope.rollout), {}).get(scope.member)

    async def patch(self) -> str | None:
        """`git diff HEAD` of the calling member's checkout (new files included via intent-to-add); None when that
        member never touched the repository."""
        path = self.existing()
        if path is None:
            return None

        def diff() -> str:
            git(["add", "--intent-to-add", "--all"], cwd=path)
            return git(["diff", "HEAD"], cwd=path)

        return await anyio.to_thread.run_sync(diff)


    def _forget(self, key: int) -> None:
        with self._lock:
            owned = self._by_rollout.pop(key, {})
        for path in owned.values():
            shutil.rmtree(path, ignore_errors=True)
