"""The bad-input contract of every command, in one place: a strict parser and strict option types.

- No abbreviations (`--bud 5` is an error, not `--budget 5`).
- Numbers are ASCII only (`int("٤")`, `int("1_0")`, `float("nan")` are all accepted by Python; not here).
- Timeouts are finite and positive; counts and limits are positive; ports are 0..65535.
- `--out` must be (or be creatable as) a writable directory: checked before anything is written.

Every violation is a `UsageError` (one line on stderr, exit 2) raised before any side effect.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from core.errors import UsageError

_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class ParseError(UsageError):
    """argparse refused the command line: `PROG: MESSAGE`, with both kept for a command that words its own line."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(f"{prog}: {message}")
        self.prog, self.message = prog, message


class StrictParser(argparse.ArgumentParser):
    """The one parser of every command (and subcommand: pass it as `parser_class`): argparse without
    abbreviations whose errors are one-line `ParseError`s (a `UsageError`: exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise ParseError(self.prog, message)


def parse_ascii_int(text: str, what: str) -> int:
    if not isinstance(text, str) or not _INT.fullmatch(text):
        raise UsageError(f"{what} must be an integer written with ASCII digits, got {text!r}")
    return int(text)


def parse_finite_float(text: str, what: str) -> float:
    if not isinstance(text, str) or not _FLOAT.fullmatch(text):
        raise UsageError(f"{what} must be a finite number written with ASCII digits, got {text!r}")
    value = float(text)
    if not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number, got {text!r}")
    return value


def int_in(what: str, low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an ASCII integer in [low, high] (either bound may be open)."""

    def parse(text: str) -> int:
        value = parse_ascii_int(text, what)
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f">= {low}" if high is None else f"<= {high}" if low is None else f"in {low}..{high}"
            raise UsageError(f"{what} must be {bounds}, got {text}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_float(what: str, *, allow_zero: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite ASCII number > 0 (>= 0 with allow_zero)."""

    def parse(text: str) -> float:
        value = parse_finite_float(text, what)
        if value < 0 or (value == 0 and not allow_zero):
            raise UsageError(f"{what} must be {'>= 0' if allow_zero else '> 0'}, got {text}")
        return value

    parse.__name__ = "number"
    return parse


def check_ascii_text(text: str, what: str) -> str:
    if not text.isascii() or not text.isprintable():
        raise UsageError(f"{what} must be printable ASCII, got {text!r}")
    return text


def _name_max(directory: Path) -> int:
    try:
        return os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _exists(path: Path) -> bool:
    try:
        return path.exists() or path.is_symlink()
    except OSError:  # e.g. a component longer than NAME_MAX
        return False


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not _exists(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _check_writable_dir(directory: Path, what: str, shown: Path) -> None:
    if not directory.is_dir():
        raise UsageError(f"{what} {shown}: {directory} is not a directory")
    if _read_only_mount(directory) or not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {shown}: {directory} is not writable")


def check_path_names(path: Path, what: str) -> None:
    """Every component of `path` fits the file system's name limit (checked without creating anything)."""
    for part in path.parts:
        limit = _name_max(_nearest_existing(path))
        if len(os.fsencode(part)) > limit:
            raise UsageError(f"{what}: a path component is longer than {limit} bytes ({part[:40]}...)")


def check_out_directory(out: Path, what: str = "--out") -> None:
    """`out` is a writable directory, or can be created as one; nothing is created here."""
    check_path_names(out, what)
    if _exists(out):
        if not out.is_dir():
            raise UsageError(f"{what} {out} exists and is not a directory")
        _check_writable_dir(out, what, out)
        return
    _check_writable_dir(_nearest_existing(out.absolute()), what, out)


def check_out_file(out: Path, what: str = "--out") -> None:
    """`out` names a regular file to (re)write: not a directory or device, in a writable (creatable) directory."""
    check_path_names(out, what)
    if out.is_dir():
        raise UsageError(f"{what} {out} is a directory; give a file name")
    if out.exists() and not out.is_file():
        raise UsageError(f"{what} {out} is not a regular file")
    check_out_directory(out.absolute().parent, f"{what} {out}: its directory")
