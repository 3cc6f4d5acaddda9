"""`card schema --out DIR`: JSON Schemas (draft 2020-12, generated from the pydantic models the validator uses) of
every stream row, the manifest, the reporting-rule registry, a drops manifest, the bundle records and the payload
of every annotation namespace this engine declares. Files are written one by one, each atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from engine.cards.format.model import ROW_MODELS, BundleRecord, DropsManifest, Manifest, RuleEntry
from core.errors import UsageError
from engine.cards.manifest import json_bytes
from engine.cards.namespaces import PAYLOAD_MODELS

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _schema(title: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": DIALECT, **schema, "title": title}


def schemas() -> dict[str, dict[str, Any]]:
    """File name -> JSON Schema."""
    out = {f"{stream}.schema.json": _schema(f"rollout-card {stream}.jsonl row", model.model_json_schema())
           for stream, model in ROW_MODELS.items()}
    objects: dict[str, tuple[str, type[BaseModel]]] = {
        "manifest.schema.json": ("rollout-card manifest.json", Manifest),
        "drops.schema.json": ("rollout-card drops manifest (drops/<rule_id>.json)", DropsManifest),
        "bundles.schema.json": ("rollout-card bundles.jsonl row", BundleRecord)}
    for name, (title, model) in objects.items():
        out[name] = _schema(title, model.model_json_schema(by_alias=True))
    out["reporting_rules.schema.json"] = _schema("rollout-card reporting_rules.json",
                                                 TypeAdapter(list[RuleEntry]).json_schema())
    for namespace, model in PAYLOAD_MODELS.items():
        out[f"annotations.{namespace}.payload.schema.json"] = _schema(f"payload of annotation namespace {namespace}",
                                                                      model.model_json_schema())
    return dict(sorted(out.items()))


def write_schemas(out: Path) -> list[Path]:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in schemas().items():
        handle, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(json_bytes(schema))
            os.chmod(tmp, 0o644)
            os.replace(tmp, out / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(out / name)
    return written
