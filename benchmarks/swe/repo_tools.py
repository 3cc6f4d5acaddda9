"""The SWE agents' repository tools (protocol-v1 section 10): file_read, file_write (Single/Independent),
str_replace (the other topologies), list_dir, search_repo, shell_exec - all on the calling agent's own checkout.

This module is the program that runs INSIDE the jail (benchmarks/swe/tool_jail.py ships its source as the jailed
main.py; it imports the standard library only): it reads one request `{"tool", "args", "root"}` on stdin, runs the
tool on the checkout at `root` (/testbed in the jail) and prints the tool's text. shell_exec replaces the program
with `bash -c COMMAND` in the checkout, so the command's output goes straight to the jail's capped pipes. The
engine's side (which tools exist, the jail, the limits, how a result reads) is tool_jail.py.

Paths are relative to the repository root and cannot leave it (no `..`, no absolute paths, no symlinks out, no
`.git`): these checks give the model a clear message; the boundary is the jail, in which the checkout is the only
writable host path and `.git` is read-only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


READ_CHARS = 12_000
OUTPUT_CHARS = 6_000
SHELL_TIMEOUT_S = 120.0
LIST_ENTRIES = 400


def _schema(name: str, description: str, params: dict[str, str], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: {"type": "string", "description": v}
                                                         for k, v in params.items()},
                       "required": list(required)}}}


SCHEMAS = {
    "file_read": _schema("file_read", "Read a file of the repository (path relative to the root).",
                         {"path": "file path"}, ("path",)),
    "file_write": _schema("file_write", "Write (create or overwrite) a file of the repository.",
                          {"path": "file path", "content": "full new content"}, ("path", "content")),
    "str_replace": _schema("str_replace", "Replace the one occurrence of old_str in a file by new_str.",
                           {"path": "file path", "old_str": "exact text, occurring once", "new_str": "replacement"},
                           ("path", "old_str", "new_str")),
    "list_dir": _schema("list_dir", "List a directory of the repository ('.' = the root).", {"path": "directory"},
                        ()),
    "search_repo": _schema("search_repo", "Search tracked files for a regular expression (git grep -n -E).",
                           {"pattern": "regular expression", "path": "optional sub-directory"}, ("pattern",)),
    "shell_exec": _schema("shell_exec", "Run a shell command in the repository root (no network, 120 s limit).",
                          {"command": "bash command"}, ("command",)),
}
TOPOLOGY_TOOLS = {
    "single": ("file_read", "file_write", "list_dir", "search_repo", "shell_exec"),
    "independent": ("file_read", "file_write", "list_dir", "search_repo", "shell_exec"),
    "sequential": ("file_read", "str_replace", "list_dir", "search_repo", "shell_exec"),
    "centralized": ("file_read", "str_replace", "list_dir", "search_repo", "shell_exec"),
    "decentralized": ("file_read", "str_replace", "list_dir", "search_repo", "shell_exec"),
}


class ToolInputError(ValueError):
    pass


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


def inside(root: Path, relative: Any) -> Path:
    if not isinstance(relative, str) or not relative.strip():
        raise ToolInputError("needs a non-empty relative 'path'")
    if relative.startswith(("/", "~")):
        raise ToolInputError(f"path {relative!r} must be relative to the repository root")
    target = (root / relative).resolve()
    base = root.resolve()
    if target != base and base not in target.parents:
        raise ToolInputError(f"path {relative!r} leaves the repository")
    if ".git" in target.relative_to(base).parts:
        raise ToolInputError("the .git directory is read-only for the agents")
    return target


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolInputError(f"needs a string {key!r}")
    return value


def file_read(root: Path, args: dict[str, Any]) -> str:
    path = inside(root, args.get("path"))
    if not path.is_file():
        return f"error: no file {args.get('path')!r}"
    return _cut(path.read_text(encoding="utf-8", errors="replace"), READ_CHARS)


def file_write(root: Path, args: dict[str, Any]) -> str:
    path = inside(root, args.get("path"))
    content = _text(args, "content")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return f"wrote {len(content)} characters to {args['path']}"


def str_replace(root: Path, args: dict[str, Any]) -> str:
    path = inside(root, args.get("path"))
    old, new = _text(args, "old_str"), _text(args, "new_str")
    if not path.is_file():
        return f"error: no file {args.get('path')!r}"
    text = path.read_text(encoding="utf-8")
    count = text.count(old) if old else 0
    if count != 1:
        return f"error: old_str occurs {count} times in {args['path']}; it must occur exactly once"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return f"replaced 1 occurrence in {args['path']}"


def list_dir(root: Path, args: dict[str, Any]) -> str:
    path = inside(root, args.get("path") or ".")
    if not path.is_dir():
        return f"error: no directory {args.get('path')!r}"
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir() if p.name != ".git")
    more = f"\n... {len(names) - LIST_ENTRIES} more" if len(names) > LIST_ENTRIES else ""
    return "\n".join(names[:LIST_ENTRIES]) + more or "(empty)"


def search_repo(root: Path, args: dict[str, Any]) -> str:
    pattern = _text(args, "pattern")
    where = str(inside(root, args["path"]).relative_to(root.resolve())) if args.get("path") else "."
    proc = subprocess.run(["git", "grep", "-n", "-I", "-E", "-e", pattern, "--", where], cwd=root,
                          capture_output=True, text=True, timeout=60, env=_tool_env())
    if proc.returncode == 1:
        return f"no matches for {pattern!r}"
    if proc.returncode != 0:
        return f"error: {proc.stderr.strip()[:500]}"
    return _cut(proc.stdout, OUTPUT_CHARS)


def shell_exec(root: Path, args: dict[str, Any]) -> str:
    """Replaces this program with `bash -c COMMAND` in the checkout (never returns)."""
    command = _text(args, "command")
    os.chdir(root)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    sys.stdout.flush()
    os.execve(shutil.which("bash", path=TOOL_PATH) or "/bin/bash", ["bash", "-c", command], _tool_env())


def checkout_patch(root: Path, args: dict[str, Any]) -> str:
    """`git diff HEAD` of the checkout, new files included (intent-to-add on a copy of the index, its empty blob
    in a scratch object directory: .git stays read-only). Not a model tool: the engine asks for it when the
    rollout ends."""
    git_dir = Path(args.get("git_dir") or root / ".git")  # the engine names it only in the unsafe mode
    with tempfile.TemporaryDirectory() as scratch:
        index = Path(scratch, "index")
        shutil.copyfile(git_dir / "index", index)
        os.mkdir(Path(scratch, "objects"))
        env = {**_tool_env(), "GIT_INDEX_FILE": str(index), "GIT_OBJECT_DIRECTORY": str(Path(scratch, "objects")),
               "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(git_dir / "objects")}
        for argv in (["git", "add", "--intent-to-add", "--all"], ["git", "diff", "HEAD"]):
            proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise OSError(f"{' '.join(argv[:2])} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


TOOL_PATH = "/usr/bin:/bin"


def _tool_env() -> dict[str, str]:
    """The only environment of a command: constants and the interpreter's directory on PATH."""
    return {"PATH": f"{os.path.dirname(sys.executable)}:{TOOL_PATH}", "HOME": "/tmp", "TMPDIR": "/tmp",
            "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "PYTHONDONTWRITEBYTECODE": "1"}


IMPLEMENTATIONS = {"file_read": file_read, "file_write": file_write, "str_replace": str_replace,
                   "list_dir": list_dir, "search_repo": search_repo, "shell_exec": shell_exec}
ENGINE_OPERATIONS = {"checkout_patch": checkout_patch}


def serve(request: dict[str, Any]) -> str:
    """One request, as the jailed program runs it. Bad input comes back as an error text for the model."""
    name = request.get("tool")
    tool = IMPLEMENTATIONS.get(name) or ENGINE_OPERATIONS.get(name)  # type: ignore[arg-type]
    if tool is None:
        return f"error: unknown tool {name!r}; tools are {', '.join(IMPLEMENTATIONS)}"
    given = request.get("args")
    args: dict[str, Any] = given if isinstance(given, dict) else {}
    try:
        return tool(Path(request["root"]), args)
    except ToolInputError as exc:
        return f"error: {name} {exc}"
    except (OSError, UnicodeDecodeError, subprocess.SubprocessError) as exc:
        return f"error: {name} failed: {type(exc).__name__}: {exc}"


if __name__ == "__main__":
    sys.stdout.write(serve(json.loads(sys.stdin.read())))
