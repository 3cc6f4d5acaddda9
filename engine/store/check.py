"""Read-only checks of an existing store file, before anything opens it for writing.

Opening a damaged SQLite file for writing can leave -wal/-shm files behind or write into it; these checks read
only (the integrity check opens the file `immutable`: no lock, no -wal/-shm created) and raise a one-line
`ArtifactError` (exit 2) for a file that is not SQLite, shorter than its header says, corrupt, or read-only.

When a non-empty -wal file is present (a process was killed), the main file alone may lag behind or be mid-
checkpoint, so only the header is checked and SQLite's own recovery runs when the store is opened.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from core.errors import ArtifactError
from engine.store.schema import TABLES

SQLITE_MAGIC = b"SQLite format 3\x00"


def check_store_file(path: Path, *, writable: bool) -> None:
    """Raise ArtifactError unless `path` is an intact SQLite store (and writable, when asked)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise ArtifactError(f"store {path} is corrupt: not a SQLite database")
    if writable and (not os.access(path, os.R_OK | os.W_OK) or os.statvfs(path).f_flag & os.ST_RDONLY):
        raise ArtifactError(f"store {path} is read-only; the job cannot record into it")
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and pages and size < pages * page_size:
        raise ArtifactError(f"store {path} is truncated: {size} bytes, its header says {pages * page_size}")
    problem = _quick_check(path)
    if problem is not None:
        raise ArtifactError(f"store {path} is corrupt: {problem}")


def _immutable(path: Path) -> sqlite3.Connection:
    """A read-only connection that takes no lock and creates no -wal / -shm (it ignores any -wal there)."""
    return sqlite3.connect(f"file:{quote(str(path.absolute()))}?immutable=1", uri=True)


def holds_no_records(path: Path) -> bool:
    """Whether the store file at `path` (with no -wal beside it) records nothing: empty, or only the schema and
    its meta rows, as a start killed before job.json leaves it."""
    if path.stat().st_size == 0:
        return True
    try:
        conn = _immutable(path)
        try:
            return all(conn.execute(f'SELECT NOT EXISTS (SELECT 1 FROM "{name}")').fetchone()[0]
                       for name in TABLES if name != "meta")
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _quick_check(path: Path) -> str | None:
    try:
        conn = _immutable(path)
        try:
            rows = conn.execute("PRAGMA quick_check(1)").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    if rows == [("ok",)]:
        return None
    return " ".join(str(rows[0][0]).replace("*** in database main ***", "").split())[:200]
