"""API-Bank call text: find the last bracketed call `[ApiName(key='value', ...)]`, parse it with ast, format it.

Parsing accepts keyword arguments with literal values only (a bare name is read as its text, as API-Bank's own
parser does); positional arguments or bad syntax are errors (score 0).
"""

from __future__ import annotations

import ast
import re
from typing import Any

_START = re.compile(r"\[\s*[A-Za-z_]\w*\s*\(")
_CALL = re.compile(r"\[\s*(?P<name>[A-Za-z_]\w*)\s*\((?P<args>.*)\)\s*\]", re.DOTALL)


class CallParseError(ValueError):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason  # "syntax" | "positional" | "expression"


def candidates(text: str | None) -> list[str]:
    """Bracketed call candidates in order, balancing quotes, brackets and parentheses."""
    raw = text or ""
    found: list[str] = []
    for match in _START.finditer(raw):
        square = paren = 0
        quote: str | None = None
        escape = False
        for idx in range(match.start(), len(raw)):
            ch = raw[idx]
            if quote is not None:
                if escape:
                    escape = False
                elif ch == "\\":
                    escape = True
                elif ch == quote:
                    quote = None
                continue
            if ch in "'\"":
                quote = ch
            elif ch == "[":
                square += 1
            elif ch == "]":
                square -= 1
                if square == 0 and paren == 0:
                    found.append(raw[match.start(): idx + 1].strip())
                    break
            elif ch == "(":
                paren += 1
            elif ch == ")":
                paren = max(0, paren - 1)
    return found


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Name):
        return node.id
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise CallParseError("expression", f"argument is not a literal: {ast.unparse(node)}") from exc


def parse_call(call: str) -> tuple[str, dict[str, Any]]:
    match = _CALL.fullmatch(call.strip())
    if not match:
        raise CallParseError("syntax", f"not a bracketed call: {call[:200]!r}")
    name, args = match.group("name"), match.group("args").strip()
    if not args:
        return name, {}
    try:
        expr = ast.parse(f"_f({args})", mode="eval").body
    except SyntaxError as exc:
        raise CallParseError("syntax", f"invalid call syntax ({exc.msg}): {call[:200]!r}") from exc
    if not isinstance(expr, ast.Call):
        raise CallParseError("syntax", f"not a call: {call[:200]!r}")
    if expr.args or any(kw.arg is None for kw in expr.keywords):
        raise CallParseError("positional", f"positional arguments (or **kwargs) are not allowed: {call[:200]!r}")
    return name, {kw.arg: _value(kw.value) for kw in expr.keywords if kw.arg is not None}


def extract_call(text: str | None) -> str | None:
    """The last candidate that parses, else the last candidate, else None."""
    found = candidates(text)
    for call in reversed(found):
        try:
            parse_call(call)
            return call
        except CallParseError:
            continue
    return found[-1] if found else None


def format_call(name: str, params: dict[str, Any], sort: bool = False) -> str:
    items = sorted(params.items()) if sort else list(params.items())
    return f"[{name}(" + ", ".join(f"{key}={value!r}" for key, value in items) + ")]"


def normalize_params(params: dict[str, Any]) -> dict[str, Any]:
    """String values that look like Python containers are read as literals (API-Bank logs store them as text)."""
    out: dict[str, Any] = {}
    for key, value in (params or {}).items():
        if isinstance(value, str) and value[:1] in "[{(":
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                pass
        out[str(key)] = value
    return out
