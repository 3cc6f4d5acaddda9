"""The SWE agents' repository tools (protocol-v1 section 10): file_read, file_write (Single/Independent),
str_replace (the other topologies), list_dir, search_repo, shell_exec - all on the calling agent's own checkout
(benchmarks/swe/workspace.py). Paths are relative to the repository root and cannot leave it (no `..`, no
absolute paths, no symlinks out). shell_exec runs `bash -c` in the checkout inside a fresh network and PID
namespace (`unshare`, probed by the sandbox), with an empty environment and a time limit; without a network
namespace it refuses rather than run with the network on. It is not the instance's Singularity image: the
repository's own dependencies are whatever this machine has.
"""

from __future__ import annotations

import functools
import os
import subprocess
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
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/local/bin:/usr/bin:/bin"})
    if proc.returncode == 1:
        return f"no matches for {pattern!r}"
    if proc.returncode != 0:
        return f"error: {proc.stderr.strip()[:500]}"
    return _cut(proc.stdout, OUTPUT_CHARS)


@functools.lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...] | None:
    """`unshare --net` (plus a user namespace when not root), tried once; None when neither works."""
    options = [("unshare", "--net")] if os.geteuid() == 0 else []
    options.append(("unshare", "--user", "--map-root-user", "--net"))
    for prefix in options:
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def shell_exec(root: Path, args: dict[str, Any]) -> str:
    command = _text(args, "command")
    prefix = network_namespace_prefix()
    if prefix is None:
        return "error: shell_exec needs a network namespace (unshare), which this machine does not offer"
    try:
        proc = subprocess.run([*prefix, "bash", "-c", command], cwd=root, capture_output=True, text=True,
                              timeout=SHELL_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root), "LANG": "C.UTF-8"})
    except subprocess.TimeoutExpired:
        return f"error: the command ran past {SHELL_TIMEOUT_S:.0f} s and was stopped"
    out = f"exit status: {proc.returncode}\nstdout:\n{_cut(proc.stdout, OUTPUT_CHARS)}"
    if proc.stderr:
        out += f"\nstderr:\n{_cut(proc.stderr, OUTPUT_CHARS // 2)}"
    return out


IMPLEMENTATIONS = {"file_read": file_read, "file_write": file_write, "str_replace": str_replace,
                   "list_dir": list_dir, "search_repo": search_repo, "shell_exec": shell_exec}


def run_repo_tool(root: Path, name: str, arguments: Any) -> str:
    """Blocking (call it in a worker thread). Bad input comes back as an error text for the model."""
    tool = IMPLEMENTATIONS.get(name)
    if tool is None:
        return f"error: unknown tool {name!r}; tools are {', '.join(IMPLEMENTATIONS)}"
    args = arguments if isinstance(arguments, dict) else {}
    try:
        return tool(root, args)
    except ToolInputError as exc:
        return f"error: {name} {exc}"
    except (OSError, UnicodeDecodeError, subprocess.SubprocessError) as exc:
        return f"error: {name} failed: {type(exc).__name__}: {exc}"
