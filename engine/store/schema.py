"""Table layout of card.sqlite: the five rollout-card streams with the paper's column names (plus run_id and a
few indexed engine columns), content-addressed blobs, and the engine's rollout index used for replay."""

from __future__ import annotations

import sqlite_utils

STORE_SCHEMA_VERSION = 1


def create_schema(db: sqlite_utils.Database) -> None:
    db.enable_wal()
    db.execute("PRAGMA synchronous=NORMAL")
    if "events" not in db.table_names():
        db.table("events").create(
            {"event_id": str, "run_id": str, "task_execution_id": str, "node_id": str, "worker_binding_key": str,
             "sequence": int, "event_type": str, "turn_id": str, "payload": str, "started_at": str,
             "completed_at": str, "policy_version": str, "request_key": str, "ok": int},
            pk="event_id",
        )
        db.table("events").create_index(["task_execution_id", "sequence"], unique=True)
        db.table("events").create_index(["request_key", "ok"])
    if "nodes" not in db.table_names():
        db.table("nodes").create(
            {"node_id": str, "run_id": str, "parent_id": str, "instance_key": str, "task_key": str, "status": str,
             "assigned_worker_key": str, "level": int, "created_at": str, "updated_at": str},
            pk="node_id",
        )
    if "edges" not in db.table_names():
        db.table("edges").create(
            {"source_node_id": str, "target_node_id": str, "run_id": str, "status": str, "created_at": str,
             "updated_at": str},
            pk=("source_node_id", "target_node_id"),
        )
    if "annotations" not in db.table_names():
        db.table("annotations").create(
            {"target_type": str, "target_id": str, "namespace": str, "sequence": int, "payload": str,
             "created_at": str, "run_id": str},
            pk=("target_type", "target_id", "namespace", "sequence"),
        )
    if "mutations" not in db.table_names():
        db.table("mutations").create(
            {"sequence": int, "run_id": str, "mutation_type": str, "target_type": str, "target_id": str,
             "actor": str, "old_value": str, "new_value": str, "reason": str, "created_at": str},
            pk="sequence",
        )
    if "blobs" not in db.table_names():
        db.table("blobs").create({"sha256": str, "bytes": int, "media_type": str, "encoding": str, "content": bytes},
                           pk="sha256")
    if "rollouts" not in db.table_names():
        db.table("rollouts").create(
            {"rollout_key": str, "node_id": str, "evaluation_id": str, "phase": str, "position": int,
             "record": str, "created_at": str},
            pk="rollout_key",
        )
        db.table("rollouts").create_index(["evaluation_id", "position"])
    if "meta" not in db.table_names():
        db.table("meta").create({"key": str, "value": str}, pk="key")
        db.table("meta").insert({"key": "store_schema_version", "value": str(STORE_SCHEMA_VERSION)})
