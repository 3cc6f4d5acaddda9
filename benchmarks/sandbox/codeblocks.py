"""Extract the program from a model answer (protocol-v1 section 10, LCB/APPS).

Rule: the last fenced block that parses (`ast.parse`), preferring blocks labelled python/py; blocks whose body
starts with `{` or `[` (JSON) are skipped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_FENCE = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)```", re.S)
PYTHON_LABELS = ("python", "py", "python3")


@dataclass(frozen=True)
class FencedBlock:
    label: str
    body: str


@dataclass(frozen=True)
class CodeExtraction:
    """`code` when a block parses; otherwise `problem` is "no_code_block" or "syntax_error" with `detail`."""

    code: str | None
    problem: str | None = None
    detail: str = ""


def fenced_blocks(text: str | None) -> list[FencedBlock]:
    if not text:
        return []
    return [FencedBlock(m.group(1).strip().lower(), m.group(2)) for m in _FENCE.finditer(text)]


def _syntax_error(code: str) -> str | None:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, MemoryError, RecursionError) as exc:
        return str(exc) or type(exc).__name__
    return None


def extract_python(text: str | None) -> CodeExtraction:
    candidates = [b for b in fenced_blocks(text) if b.body.strip() and b.body.lstrip()[0] not in "{["]
    if not candidates:
        return CodeExtraction(None, "no_code_block")
    preferred = [b for b in candidates if b.label in PYTHON_LABELS]
    first_error = ""
    for group in (preferred, candidates):
        for block in reversed(group):
            error = _syntax_error(block.body)
            if error is None:
                return CodeExtraction(block.body.strip("\n") + "\n")
            first_error = first_error or error
    return CodeExtraction(None, "syntax_error", first_error)


def normalize_program(code: str | None) -> str | None:
    """Whitespace-normalized program for voting: trailing spaces and blank lines dropped, tabs expanded."""
    if code is None:
        return None
    lines = [line.expandtabs(4).rstrip() for line in code.splitlines()]
    text = "\n".join(line for line in lines if line.strip())
    return text or None
