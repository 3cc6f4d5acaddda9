"""A real local mirror for the SWE repository-tool tests (what `--swe-repos DIR` holds), and the row that names it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from core.models import Row


def sh(*args: str, cwd: Path) -> str:
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "HOME": str(cwd)}
    return subprocess.run(list(args), cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def make_mirror(base_dir: Path) -> tuple[Path, str]:
    """(the --swe-repos directory holding acme__calc.git, the base commit); the mirror also has a later commit."""
    src = base_dir / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "mod.py").write_text("def add(a, b):\n    return a - b\n")
    sh("git", "init", "-q", cwd=src)
    sh("git", "add", "-A", cwd=src)
    sh("git", "commit", "-q", "-m", "base", cwd=src)
    base = sh("git", "rev-parse", "HEAD", cwd=src).strip()
    (src / "pkg" / "mod.py").write_text("# a later commit the checkout must not see\n")
    sh("git", "commit", "-q", "-am", "later", cwd=src)
    repos = base_dir / "repos"
    repos.mkdir()
    sh("git", "clone", "-q", "--mirror", str(src), str(repos / "acme__calc.git"), cwd=base_dir)
    return repos, base


class Attempt:
    """Stands for one rollout attempt's context object (the key of its checkouts)."""


def row(base: str) -> Row:
    return Row(id="acme__calc-1", dataset="swe", task={"repo": "acme/calc", "base_commit": base,
                                                        "problem_statement": "add() subtracts", "hints_text": ""},
               gold={"patch": "", "test_patch": ""})
