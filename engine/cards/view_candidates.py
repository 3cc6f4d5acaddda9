"""The viewer's candidates and learning curve, from what the card records: the bundles.jsonl records (seed,
incumbent, deployed: their texts and metadata), the `bundle_sha256` every rollout's outcome names, the locked
selection's validation scores (manifest run.derivation.selection) and the reflection calls whose answer a
candidate's role text holds (its proposer). Candidates are named in order of their first optimize rollout: `seed`,
then `C1`, `C2`, ...; a bundle that no rollout names but the card records comes last."""

from __future__ import annotations

from typing import Any

from engine.cards.view_calls import as_dict


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def optimize_order(rollouts: list[dict[str, Any]], annotations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Optimize-phase rollouts in the order their outcomes were recorded, each with `x`: the rollouts charged so
    far (a rollout the ledger did not charge keeps the count it was recorded at)."""
    by_id = {r["id"]: r for r in rollouts if r["phase"] == "optimize" and not r["budget_exhausted"]}
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    charged = 0
    for a in annotations:
        r = by_id.get(a["target_id"])
        if a["namespace"] != "mpb.rollout" or r is None or r["id"] in seen:
            continue
        seen.add(r["id"])
        charged += r.get("charged") is not False
        out.append({**r, "x": charged})
    return out


def _unfenced(text: Any) -> str:
    s = str(text or "").strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[1] if "\n" in s else ""
        s = s.rsplit("```", 1)[0] if s.rstrip().endswith("```") else s
    return s.strip()


def _proposers(roles: dict[str, Any], reflections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for c in reflections:
        answer = _unfenced(c["response"])
        if len(answer) >= 20 and any(isinstance(t, str) and answer in t for t in roles.values()):
            out.append({"id": c["id"], "purpose": c["purpose"], "key": c["key"]})
    return out


def candidates(rollouts: list[dict[str, Any]], ordered: list[dict[str, Any]], bundles: list[dict[str, Any]],
               selection: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    records = {str(b.get("bundle_sha256")): b for b in bundles}
    seed = next((s for s, b in records.items() if "seed" in (b.get("used_as") or [])), None)
    shas: list[str] = [seed] if seed else []
    for r in ordered:
        if r["bundle"] and str(r["bundle"]) not in shas:
            shas.append(str(r["bundle"]))
    shas += [s for s in records if s not in shas]
    inc = (selection.get("incumbent_bundle") or {}).get("$bundle")
    base = (selection.get("seed_bundle") or {}).get("$bundle")
    reflections = [c for c in calls if c["component"] == "reflection" and c["error"] is None]
    out = []
    for i, sha in enumerate(shas):
        record = records.get(sha, {})
        used = list(record.get("used_as") or [])
        mine = [r for r in ordered if str(r["bundle"]) == sha]
        scored = [float(r["score"]) for r in mine if r["score"] is not None and r.get("charged") is not False]
        val = [r for r in rollouts if r["phase"] == "validation" and str(r["bundle"]) == sha]
        vscored = [float(r["score"]) for r in val if r["score"] is not None]
        meta = as_dict(record.get("metadata"))
        recorded_val = (selection.get("baseline_validation_score") if sha == base else
                        selection.get("incumbent_validation_score") if sha == inc else None)
        accepted = ("deployed" if "deployed" in used else "incumbent" if "incumbent" in used or sha == inc else
                    "seed" if "seed" in used else "not kept")
        out.append({
            "name": "seed" if sha == seed else f"C{i if seed else i + 1}", "sha": sha, "used_as": used,
            "recorded": bool(record), "roles": sorted((record.get("roles") or {}).keys()),
            "demos": len(record.get("demos") or []), "proposer": meta.get("optimizer"),
            "metadata": {k: v for k, v in meta.items() if k not in ("optimizer",)},
            "reflections": _proposers(record.get("roles") or {}, reflections) if record and sha != seed else [],
            "optimize": {"n": len(mine), "scored": len(scored), "mean": _mean(scored),
                         "failed": sum(r["score"] is None for r in mine),
                         "first_x": mine[0]["x"] if mine else None, "last_x": mine[-1]["x"] if mine else None},
            "validation": {"n": len(val), "mean": _mean(vscored), "failed": len(val) - len(vscored),
                           "selection_score": recorded_val},
            "accepted": accepted})
    return out


def curve(cands: list[dict[str, Any]], ordered: list[dict[str, Any]]) -> dict[str, Any]:
    """Points: per candidate, its mean score over its scored optimize rollouts at the count of rollouts charged
    when its last one was recorded. Line: the incumbent carried forward over rollouts charged -- the seed from 0,
    then the final incumbent from its first rollout to the last rollout charged (a flat line when the seed stayed
    the incumbent); without a recorded seed, the best candidate so far."""
    x_max = max([r["x"] for r in ordered] or [0])
    pts = sorted(({"x": c["optimize"]["last_x"], "y": c["optimize"]["mean"], "n": c["optimize"]["scored"],
                   "bundle": c["sha"][:12], "name": c["name"]} for c in cands if c["optimize"]["mean"] is not None),
                 key=lambda p: (p["x"], p["name"]))
    seed = next((c for c in cands if c["name"] == "seed" and c["optimize"]["mean"] is not None), None)
    inc = next((c for c in cands if c["accepted"] in ("incumbent", "deployed") and c["name"] != "seed"
                and c["optimize"]["mean"] is not None), None)
    line: list[list[float]] = []
    if seed is not None:
        line = [[0, seed["optimize"]["mean"]]]
        label = "seed (no candidate accepted), carried forward"
        if inc is not None:
            line += [[inc["optimize"]["first_x"], seed["optimize"]["mean"]],
                     [inc["optimize"]["first_x"], inc["optimize"]["mean"]]]
            label = f"incumbent: seed, then {inc['name']}"
        line.append([x_max, line[-1][1]])
    elif pts:
        label, best = "best candidate so far", -1.0
        for p in pts:
            best = max(best, p["y"])
            line += [[p["x"], line[-1][1]]] if line else []
            line.append([p["x"], best])
        line.append([x_max, best])
    else:
        label = "no scored optimize rollout"
    return {"points": pts, "line": line, "line_label": label, "x_max": x_max}
