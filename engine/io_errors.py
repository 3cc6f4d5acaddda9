"""The one place where foreign storage errors (sqlite3, OS, pydantic) become engine errors.

A missing, truncated, corrupt or read-only run directory or store, or a full disk, ends a command with one line
and exit 2 (`StorageError`), never a traceback. The store's SQLite transactions and the atomic artifact writes
(temporary file + rename) make sure the files already there are left as they were.

What is translated and what is not is decided per class (tests/engine/cli/test_io_errors.py enumerates every
sqlite3 error class and every built-in OSError subclass against these tables):

- sqlite3.OperationalError (disk full, read-only, locked, cannot open, I/O error), InternalError and
  sqlite3.DatabaseError itself
  ("file is not a database", "database disk image is malformed") are storage failures.
- sqlite3.IntegrityError / ProgrammingError / InterfaceError / NotSupportedError / DataError are bugs in this
  engine's SQL: they propagate loudly.
- OSError of file-system kinds are storage failures; network, process and timeout kinds are not (the chat client
  translates transport errors in engine/chat/errors.py, and anything else is a bug).
- pydantic.ValidationError reaching the top means a stored record or artifact does not match its schema.
"""

from __future__ import annotations

import errno
import sqlite3

import pydantic

from core.errors import ArtifactError, EngineError
from engine.containment import leaves


class StorageError(ArtifactError):
    """The run directory or store cannot be read or written (exit code 2)."""

    kind = "storage_error"


SQLITE_STORAGE = (sqlite3.OperationalError, sqlite3.InternalError)
SQLITE_CORRUPT_EXACT = sqlite3.DatabaseError  # the base class itself: "file is not a database", "malformed"
SQLITE_BUGS = (sqlite3.IntegrityError, sqlite3.ProgrammingError, sqlite3.InterfaceError, sqlite3.NotSupportedError,
               sqlite3.DataError)
OS_NOT_STORAGE = (ConnectionError, TimeoutError, ChildProcessError, ProcessLookupError, InterruptedError,
                  BlockingIOError)

_ERRNO_TEXT = {
    errno.ENOSPC: "no space left on the device (disk full)",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large (file size limit reached)",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENAMETOOLONG: "file name too long",
    errno.ENOENT: "no such file or directory",
    errno.ENOTDIR: "not a directory",
    errno.EISDIR: "is a directory",
    errno.EIO: "input/output error",
}


def _sqlite_text(exc: sqlite3.Error) -> str:
    text = str(exc).strip() or type(exc).__name__
    lowered = text.lower()
    if "disk is full" in lowered:
        return "database or disk is full (disk full)"
    if "readonly" in lowered or "read-only" in lowered:
        return "the store is read-only (attempt to write a readonly database)"
    if "not a database" in lowered or "malformed" in lowered:
        return f"the store is corrupt or truncated ({text})"
    return text


def translate_storage_error(exc: BaseException, where: str | None = None) -> StorageError | None:
    """The engine error for a storage failure, or None when `exc` is not one (callers re-raise it)."""
    prefix = f"storage error{f' on {where}' if where else ''}: "
    if isinstance(exc, SQLITE_BUGS):
        return None
    if isinstance(exc, SQLITE_STORAGE) or type(exc) is SQLITE_CORRUPT_EXACT:
        return StorageError(prefix + _sqlite_text(exc))  # type: ignore[arg-type]
    if isinstance(exc, OSError) and not isinstance(exc, OS_NOT_STORAGE):
        text = _ERRNO_TEXT.get(exc.errno or -1) or exc.strerror or str(exc) or type(exc).__name__
        name = exc.filename if where is None and exc.filename else None
        return StorageError(prefix + (f"{name}: {text}" if name else text))
    if isinstance(exc, pydantic.ValidationError):
        first = str(exc).splitlines()
        return StorageError(prefix + f"a stored record does not match its schema ({first[0] if first else exc})")
    return None


def as_engine_error(exc: BaseException) -> EngineError | None:
    """The one engine error to report for `exc` (a group's leaves included), or None when any leaf is neither an
    engine error nor a storage failure (then the original propagates loudly)."""
    found: list[EngineError] = []
    for leaf in leaves(exc):
        if isinstance(leaf, EngineError):
            found.append(leaf)
            continue
        translated = translate_storage_error(leaf)
        if translated is None:
            return None
        found.append(translated)
    return found[0] if found else None
