"""`card view CARD --out DIR`: one static, self-contained HTML page (DIR/index.html; inline CSS, JS and data; no
server, no network) showing the run: headline numbers with their failure counts, phases, the learning curve,
every rollout with status and score (searchable by example id), per rollout the agents as a graph of who read
whom, each call's messages and response with failures and retries marked, the scores under each recorded rule,
the drops manifests and the redactions.

This module turns the card into the page's data (plain JSON, built once); `view_page` holds the page. The page
renders the rollout list once and a rollout's detail only when it is opened, so a 600-rollout 4-agent card stays
fast."""

from __future__ import annotations

import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from core.blobs import BLOB_KEY, resolve
from engine.cards.format.lines import loads
from engine.cards.format.model import BUNDLES_FILE, REGISTRY_FILE, STREAMS
from core.errors import ArtifactError, UsageError
from engine.cards.blobcheck import lines_holding
from engine.cards.bundle import Bundle
from engine.cards.view_calls import call_summary, call_view, optimizer_calls
from engine.cards.view_candidates import candidates, curve, optimize_order
from engine.cards.view_page import page
from engine.cards.view_story import banner, prompt_diff

PHASE_ORDER = {"optimize": 0, "validation": 1, "test": 2}


def _latest(annotations: list[dict[str, Any]], namespace: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for a in annotations:
        if a["namespace"] == namespace and a["target_type"] == "node":
            if a["target_id"] not in out or a["sequence"] >= out[a["target_id"]]["sequence"]:
                out[a["target_id"]] = a
    return {k: v["payload"] for k, v in out.items()}


def _rollouts(rows: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    roots = {n["node_id"] for n in rows["nodes"] if n["parent_id"] is None}
    outcomes, scores = _latest(rows["annotations"], "mpb.rollout"), _latest(rows["annotations"], "mpb.score")
    out = []
    for n in rows["nodes"]:
        if n["parent_id"] not in roots or (n["node_id"] not in outcomes and n["status"] != "skipped"):
            continue
        o = outcomes.get(n["node_id"], {})
        score = scores.get(n["node_id"], {}).get("value")
        out.append({"id": n["node_id"], "example": o.get("example_id") or n["instance_key"],
                    "phase": o.get("phase") or n["task_key"], "status": o.get("status") or n["status"],
                    "node_status": n["status"], "score": score, "attempts": o.get("attempts", 0),
                    "evaluation": o.get("evaluation_id"), "position": o.get("position", 0),
                    "budget_exhausted": bool(o.get("budget_exhausted")), "error": o.get("error"),
                    "feedback": scores.get(n["node_id"], {}).get("feedback"), "bundle": o.get("bundle_sha256"),
                    "charged": o.get("charged")})
    out.sort(key=lambda r: (PHASE_ORDER.get(str(r["phase"]), 3), str(r["evaluation"]), r["position"], r["id"]))
    return out


def _details(rows: dict[str, list[dict[str, Any]]], rollout_ids: set[str]) -> dict[str, Any]:
    """Per rollout: its agent-turn nodes, the read edges between them and every model call, by attempt."""
    def owner(node_id: str) -> str | None:
        base = node_id.split("#", 1)[0]
        return base if base in rollout_ids and "#" in node_id else None

    details: dict[str, Any] = defaultdict(lambda: {"agents": [], "edges": [], "calls": []})
    for n in rows["nodes"]:
        r = owner(n["node_id"])
        if r is not None:
            details[r]["agents"].append({"id": n["node_id"], "label": n["node_id"][len(r):],
                                         "worker": n["assigned_worker_key"], "status": n["status"]})
    for e in rows["edges"]:
        r = owner(e["source_node_id"])
        if r is not None:
            details[r]["edges"].append([e["source_node_id"], e["target_node_id"], e["status"]])
    for e in rows["events"]:
        r = owner(e["task_execution_id"])
        if r is not None:
            details[r]["calls"].append(call_view(e, e["task_execution_id"][len(r):]))
    return dict(details)


def _phases(mutations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in mutations:
        if m["mutation_type"] in ("phase.completed", "selection.sealed"):
            new = {k: v for k, v in (m["new_value"] or {}).items() if k != "mutation_type"
                   and not (isinstance(v, list) and len(v) > 8)}
            out.append({"phase": new.pop("phase", "selection"), "at": m["created_at"], "fields": new})
    return out


def view_data(bundle: Bundle) -> dict[str, Any]:
    try:
        manifest = json.loads(bundle.files["manifest.json"])
        registry = json.loads(bundle.files.get(REGISTRY_FILE, b"[]"))
        drops = {n: json.loads(d) for n, d in bundle.files.items() if n.startswith("drops/")}
        holding = lines_holding(bundle, BLOB_KEY)
        rows = {s: [resolve(loc.row, bundle.blob) if loc.where in holding else loc.row for loc in bundle.rows(s)[0]]
                for s in STREAMS}
    except (KeyError, ValueError) as exc:
        raise ArtifactError(f"card unreadable: {exc}") from exc
    rollouts = _rollouts(rows)
    rules = [{"rule_id": e.get("rule_id"), "kind": e.get("kind"), "description": e.get("description"),
              "config": e.get("config"), **{k: (e.get("output_target") or {}).get(k) for k in
                                            ("status", "values", "arms", "message")},
              "drops": drops.get(str(e.get("drops_manifest")))} for e in registry if isinstance(e, dict)]
    bundles = [loads(line) for line in bundle.files.get(BUNDLES_FILE, b"").decode("utf-8").split("\n") if line]
    ids = {r["id"] for r in rollouts}
    calls = optimizer_calls(rows["events"], ids)
    run = manifest.get("run") if isinstance(manifest.get("run"), dict) else {}
    selection = (run.get("derivation") or {}).get("selection") if isinstance(run.get("derivation"), dict) else None
    ordered = optimize_order(rollouts, rows["annotations"])
    cands = candidates(rollouts, ordered, bundles, selection if isinstance(selection, dict) else {}, calls)
    names = {c["sha"]: c["name"] for c in cands}
    for r in rollouts:
        r["candidate"] = names.get(str(r["bundle"])) if r["bundle"] else None
    return {"card_id": manifest.get("card_id"), "run": manifest.get("run"), "reported": manifest.get("reported"),
            "bundles": bundles, "banner": banner(manifest, rows["annotations"]),
            "release_scope": manifest.get("release_scope"), "phases": _phases(rows["mutations"]),
            "candidates": cands, "curve": curve(cands, ordered), "diff": prompt_diff(bundles), "rules": rules,
            "rollouts": rollouts, "details": _details(rows, ids), "calls": calls,
            "call_summary": call_summary(calls)}


def write_view(bundle: Bundle, out: Path) -> Path:
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    html = page(view_data(bundle))
    out.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".index.html.", suffix=".tmp", dir=out)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(html)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out / "index.html")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out / "index.html"
