"""Prompt bundles as first-class card records (`bundles.jsonl`): one row per distinct bundle the run wrote (seed,
incumbent, deployed), with its role texts, demos, metadata and digest, and what the run used it as.

Sources in a job directory: `optimization/bundle-<sha256>.json`, `optimization.json` (seed_bundle,
incumbent_bundle) and `selection.json` (incumbent_bundle, deployed_bundle). The validator recomputes every digest
(`core.models.PromptBundle.digest`: sha256 of the canonical JSON of roles, demos and metadata) and requires a record
for the bundle of every test-phase rollout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.canonical import content_hash
from engine.cards.format.lines import Located
from engine.cards.format.model import BUNDLES_FILE, BundleRecord
from engine.cards.format.omissions import marker_paths
from engine.cards.format.problems import Problem
from core.errors import ArtifactError

SOURCES = (("optimization.json", "seed_bundle", "seed"), ("optimization.json", "incumbent_bundle", "incumbent"),
           ("selection.json", "incumbent_bundle", "incumbent"), ("selection.json", "deployed_bundle", "deployed"))


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path} is not readable JSON: {exc}") from exc


def digest(record: dict[str, Any]) -> str:
    return content_hash({"roles": record.get("roles"), "demos": list(record.get("demos") or []),
                         "metadata": record.get("metadata") or {}})


def read_bundles(run_dir: Path) -> list[dict[str, Any]]:
    """The distinct bundles of a job directory, sorted by digest; `used_as` lists every role each one played."""
    found: dict[str, dict[str, Any]] = {}

    def add(raw: Any, used_as: str | None) -> None:
        if not isinstance(raw, dict) or not isinstance(raw.get("roles"), dict):
            return
        record = {"roles": raw["roles"], "demos": list(raw.get("demos") or []), "metadata": raw.get("metadata") or {}}
        key = digest(record)
        if raw.get("bundle_sha256") not in (None, key):
            raise ArtifactError(f"a bundle in {run_dir} does not match its bundle_sha256 {raw['bundle_sha256']}")
        entry = found.setdefault(key, {"bundle_sha256": key, **record, "used_as": []})
        if used_as and used_as not in entry["used_as"]:
            entry["used_as"].append(used_as)

    for name, key, used_as in SOURCES:
        document = _load(run_dir / name)
        if isinstance(document, dict):
            add(document.get(key), used_as)
    for path in sorted((run_dir / "optimization").glob("bundle-*.json")):
        add(_load(path), None)
    for entry in found.values():
        entry["used_as"] = sorted(entry["used_as"]) or ["candidate"]
    return [found[k] for k in sorted(found)]


def bundle_problems(rows: list[Located], annotations: list[Located], records_required: bool = True
                    ) -> list[Problem]:
    """`records_required`: the format version has bundle records (1.1 on), so test rollouts need one."""
    out = []
    recorded: set[str] = set()
    for loc in rows:
        try:
            record = BundleRecord.model_validate(loc.row)
        except ValidationError as exc:
            first = exc.errors()[0]
            out.append(Problem("E_BUNDLE_INVALID", loc.where, f"{'.'.join(map(str, first['loc']))}: {first['msg']}"))
            continue
        recorded.add(record.bundle_sha256)
        if not marker_paths(loc.row) and digest(loc.row) != record.bundle_sha256:
            out.append(Problem("E_BUNDLE_DIGEST", loc.where, f"roles/demos/metadata do not hash to "
                                                             f"{record.bundle_sha256[:16]}..."))
    missing: dict[str, str] = {}
    for loc in annotations:
        payload = loc.row.get("payload") or {}
        if loc.row.get("namespace") == "mpb.rollout" and payload.get("phase") == "test":
            sha = payload.get("bundle_sha256")
            if records_required and isinstance(sha, str) and sha not in recorded and sha not in missing:
                missing[sha] = loc.where
    out += [Problem("E_BUNDLE_MISSING", where, f"test rollouts ran bundle {sha[:16]}... but {BUNDLES_FILE} has "
                                               "no record of it") for sha, where in missing.items()]
    return out
