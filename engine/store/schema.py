"""Table layout of card.sqlite: the five rollout-card streams with the paper's column names (plus run_id and a
few indexed engine columns), content-addressed blobs, and the engine's rollout index used for replay.

Plain `sqlite3` DDL (the same tables and index names sqlite-utils would create): importing sqlite-utils pulls in
pandas, about 70 MB of resident memory in every job process for a few CREATE TABLE statements.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

STORE_SCHEMA_VERSION = 1

TABLES: dict[str, tuple[list[tuple[str, str]], tuple[str, ...]]] = {
    "events": ([("event_id", "TEXT"), ("run_id", "TEXT"), ("task_execution_id", "TEXT"), ("node_id", "TEXT"),
                ("worker_binding_key", "TEXT"), ("sequence", "INTEGER"), ("event_type", "TEXT"), ("turn_id", "TEXT"),
                ("payload", "TEXT"), ("started_at", "TEXT"), ("completed_at", "TEXT"), ("policy_version", "TEXT"),
                ("request_key", "TEXT"), ("ok", "INTEGER")], ("event_id",)),
    "nodes": ([("node_id", "TEXT"), ("run_id", "TEXT"), ("parent_id", "TEXT"), ("instance_key", "TEXT"),
               ("task_key", "TEXT"), ("status", "TEXT"), ("assigned_worker_key", "TEXT"), ("level", "INTEGER"),
               ("created_at", "TEXT"), ("updated_at", "TEXT")], ("node_id",)),
    "edges": ([("source_node_id", "TEXT"), ("target_node_id", "TEXT"), ("run_id", "TEXT"), ("status", "TEXT"),
               ("created_at", "TEXT"), ("updated_at", "TEXT")], ("source_node_id", "target_node_id")),
    "annotations": ([("target_type", "TEXT"), ("target_id", "TEXT"), ("namespace", "TEXT"), ("sequence", "INTEGER"),
                     ("payload", "TEXT"), ("created_at", "TEXT"), ("run_id", "TEXT")],
                    ("target_type", "target_id", "namespace", "sequence")),
    "mutations": ([("sequence", "INTEGER"), ("run_id", "TEXT"), ("mutation_type", "TEXT"), ("target_type", "TEXT"),
                   ("target_id", "TEXT"), ("actor", "TEXT"), ("old_value", "TEXT"), ("new_value", "TEXT"),
                   ("reason", "TEXT"), ("created_at", "TEXT")], ("sequence",)),
    "blobs": ([("sha256", "TEXT"), ("bytes", "INTEGER"), ("media_type", "TEXT"), ("encoding", "TEXT"),
               ("content", "BLOB")], ("sha256",)),
    "rollouts": ([("rollout_key", "TEXT"), ("node_id", "TEXT"), ("evaluation_id", "TEXT"), ("phase", "TEXT"),
                  ("position", "INTEGER"), ("record", "TEXT"), ("created_at", "TEXT")], ("rollout_key",)),
    "meta": ([("key", "TEXT"), ("value", "TEXT")], ("key",)),
}
INDEXES: tuple[tuple[str, tuple[str, ...], bool], ...] = (
    ("events", ("task_execution_id", "sequence"), True),
    ("events", ("request_key", "ok"), False),
    ("rollouts", ("evaluation_id", "position"), False),
)


def _create_table(name: str, columns: list[tuple[str, str]], pk: tuple[str, ...]) -> str:
    lines = [f'   "{col}" {kind}' + (" PRIMARY KEY" if pk == (col,) else "") for col, kind in columns]
    if len(pk) > 1:
        lines.append("   PRIMARY KEY (" + ", ".join(f'"{c}"' for c in pk) + ")")
    return f'CREATE TABLE IF NOT EXISTS "{name}" (\n' + ",\n".join(lines) + "\n)"


def create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    with conn:
        for name, (columns, pk) in TABLES.items():
            conn.execute(_create_table(name, columns, pk))
        for table, cols, unique in INDEXES:
            conn.execute(f'CREATE {"UNIQUE " if unique else ""}INDEX IF NOT EXISTS "idx_{table}_{"_".join(cols)}"\n'
                         f'    ON "{table}" (' + ", ".join(f'"{c}"' for c in cols) + ")")
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('store_schema_version', ?)",
                     (str(STORE_SCHEMA_VERSION),))


CREATING = ".creating-"  # the prefix of a store being created: `.creating-card.sqlite` (and its -wal / -shm)


def creating_path(path: Path) -> Path:
    return path.with_name(CREATING + path.name)


def create_store_file(path: Path) -> None:
    """Create the store at `path` with its schema, unless a file is there, atomically: it is built under
    `creating_path(path)` and renamed into place once its last connection closed (SQLite then has checkpointed its
    WAL into the file and removed it), so a kill at any moment leaves either no store at `path` or a whole, empty
    one, and at most a leftover of the temporary name, which the next creation replaces."""
    if path.exists():
        return
    tmp = creating_path(path)
    for stale in (tmp, tmp.with_name(tmp.name + "-wal"), tmp.with_name(tmp.name + "-shm")):
        stale.unlink(missing_ok=True)
    conn = sqlite3.connect(str(tmp))
    try:
        create_schema(conn)
    finally:
        conn.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the rename is durable before job.json names the store
    finally:
        os.close(fd)

