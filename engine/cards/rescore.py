"""`card rescore`: recompute a reported number from the card alone under a registered rule, then record the rule's
registry entry (reporting_rules.json) and its drops manifest (drops/<rule_id>.json) in the bundle, refreshing the
manifest's file hashes so the card still validates."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.model import REGISTRY_FILE, DropsManifest, Implementation, RuleEntry, SemanticLoss
from core.errors import ArtifactError
from engine.cards.bundle import Bundle
from engine.cards.manifest import json_bytes, set_manifest
from engine.cards.reader import CardReader, Footprint
from engine.cards.rule_table import get_rule
from engine.cards.rules import MissingField, RuleResult


@dataclass(frozen=True)
class Outcome:
    result: RuleResult
    entry: RuleEntry
    drops: DropsManifest


def run_rule(bundle: Bundle, name: str, preloaded: dict[str, list[Located]] | None = None) -> Outcome:
    """The one code path that computes a rule on a card: `card rescore`, the exporter and `card validate`'s
    recomputation all call it. `preloaded`: validated, blob-resolved streams to read instead of the bundle's."""
    rule = get_rule(name)
    reader = CardReader(bundle, preloaded)
    footprint = Footprint()
    try:
        result = rule.compute(reader, footprint, rule.config)
    except MissingField as exc:
        result = RuleResult("missing_field", message=str(exc))
    drops_path = f"drops/{rule.rule_id}.json"
    entry = RuleEntry(
        rule_id=rule.rule_id, name=rule.name, kind=rule.kind, description=rule.description,
        implementation=Implementation.model_validate(rule.implementation()), config=dict(rule.config), view=rule.view,
        input_streams=list(rule.input_streams),
        output_target={"metric": rule.metric, "level": "aggregate", "status": result.status,
                       "values": result.values, "arms": result.arms, "message": result.message},
        drops_manifest=drops_path)
    drops = DropsManifest(rule_id=rule.rule_id, reads=reader.reads(), filters=footprint.filters,
                          collapses=list(rule.collapses),
                          semantic_losses=[SemanticLoss.model_validate(s) for s in rule.semantic_losses])
    return Outcome(result, entry, drops)


def record(bundle: Bundle, outcome: Outcome) -> None:
    """Write the entry (replacing one with the same rule_id; entries sorted) and the drops manifest."""
    try:
        registry = json.loads(bundle.files.get(REGISTRY_FILE, b"[]"))
        manifest = json.loads(bundle.files["manifest.json"])
    except (KeyError, ValueError) as exc:
        raise ArtifactError(f"card manifest or registry unreadable: {exc}") from exc
    if not isinstance(registry, list):
        raise ArtifactError(f"{REGISTRY_FILE} is not a list of rule entries")
    entries = {e.get("rule_id"): e for e in registry if isinstance(e, dict)}
    entries[outcome.entry.rule_id] = outcome.entry.model_dump(mode="json", exclude_none=True)
    bundle.files[REGISTRY_FILE] = json_bytes([entries[k] for k in sorted(entries, key=str)])
    bundle.files[outcome.entry.drops_manifest] = json_bytes(outcome.drops.model_dump(mode="json"))
    set_manifest(bundle, manifest)


def apply_rule(bundle: Bundle, name: str) -> Outcome:
    outcome = run_rule(bundle, name)
    record(bundle, outcome)
    return outcome


def format_outcome(outcome: Outcome) -> list[str]:
    entry, result = outcome.entry, outcome.result
    lines = [f"rule {entry.rule_id} ({entry.kind}): status={result.status}"]
    if result.message:
        lines.append(f"  {result.message}")
    if result.values:
        lines.append("  " + " ".join(f"{k}={_fmt(v)}" for k, v in result.values.items()))
    for label, arm in result.arms.items():
        c = arm["counts"]
        lines.append(f"  {label}: denominator={arm['denominator']} n={c['n']} usable={c['usable']} "
                     f"success={c['success']} semantic_failures={c['semantic_failures']} "
                     f"infrastructure_failures={c['infrastructure_failures']} budget_exhausted={c['budget_exhausted']}"
                     f" skipped={c['skipped']}")
    lines.append(f"  drops manifest: {entry.drops_manifest}")
    return lines


def _fmt(value: Any) -> str:
    return json.dumps(value)
