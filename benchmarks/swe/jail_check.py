"""`python -m engine sandbox check`, SWE part: the repository tools' jail tried end to end on a throw-away mirror.

One shell_exec (who am I, may I write the checkout, may I write its .git) and the scored patch, through the same
functions an SWE agent's tool calls take (workspace.py, tool_jail.py).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from core.errors import EngineError
from core.models import Row

from benchmarks.sandbox.jail import JAIL_UID
from benchmarks.swe import tool_jail
from benchmarks.swe.workspace import RepoWorkspaces, git

PROBE = "id -u; echo fixed > f.txt; touch .git/planted 2>/dev/null && echo GIT-WRITABLE; test -e /etc || echo NO-ETC"


class _Attempt:
    """Stands for a rollout attempt (the key of its checkouts)."""


def _mirror(base: Path) -> tuple[Path, str]:
    src, repos = base / "src", base / "repos"
    src.mkdir()
    repos.mkdir()
    (src / "f.txt").write_text("broken\n")
    ident = ["-c", "user.name=mpb", "-c", "user.email=mpb@localhost"]
    git(["init", "--quiet"], cwd=src)
    git(["add", "-A"], cwd=src)
    git([*ident, "commit", "--quiet", "-m", "base"], cwd=src)
    git(["clone", "--quiet", "--mirror", str(src), str(repos / "mpb__check.git")], cwd=base)
    return repos, git(["rev-parse", "HEAD"], cwd=src).strip()


def check_swe_tools() -> tuple[bool, str]:
    """(works, one line saying how, or why not and the fix)."""
    base = Path(tempfile.mkdtemp(prefix="mpb-swe-check-"))
    try:
        repos, commit = _mirror(base)
        row = Row(id="check", dataset="swe", task={"repo": "mpb/check", "base_commit": commit}, gold={})
        workspaces = RepoWorkspaces(repos)
        try:
            attempt = _Attempt()  # the checkout lives as long as its attempt
            checkout = workspaces._checkout_sync(row, attempt, 0)
            shown = tool_jail.run_repo_tool(checkout, "shell_exec", {"command": PROBE})
            diff = tool_jail.execute(checkout, "checkout_patch", {} if checkout.jailed else
                                     {"git_dir": str(checkout.git_dir)}, tool_jail.TOOL_LIMITS).stdout
        finally:
            shutil.rmtree(workspaces.root, ignore_errors=True)
    except (EngineError, OSError) as exc:
        return False, f"the SWE tools' jail could not be tried: {exc}"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    lines = shown.splitlines()
    if not checkout.jailed:
        return False, "no jail: SWE repository tools would run WITHOUT one (--unsafe-sandbox)"
    ok = (f"{JAIL_UID}" in lines and "GIT-WRITABLE" not in lines and "NO-ETC" in lines and "+fixed" in diff)
    if not ok:
        return False, f"the SWE tools' jail failed its trial ({' | '.join(lines[:6])})"
    return True, (f"jailed as uid {JAIL_UID}: /testbed (the member's checkout) the only writable host path, its "
                  f".git read-only; /usr, /bin, the interpreter and the mirrors read-only; no /etc, no network")
