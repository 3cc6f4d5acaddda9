"""`card validate` recomputes every recorded reporting rule from the card's streams, through the same code path as
`card rescore` (`rescore.run_rule`), and compares:

- each registry entry (its output target: values, per-arm denominators and failure counts, status) and its drops
  manifest with the recomputation (E_RULE_MISMATCH, E_DROPS_MISMATCH);
- each headline number in manifest.json (`reported`: value and the failure counts beside it) and the run block's
  copy of the test numbers with the recomputed values (E_HEADLINE_MISMATCH); a headline whose rule this validator
  cannot run is unverifiable and an error (E_HEADLINE_UNVERIFIED).

A registry entry of a rule this engine does not know (a custom rule) cannot be re-run: W_RULE_UNKNOWN. A known rule
whose recorded implementation hash differs from the running code still is re-run; the hash difference is
E_RULE_IMPLEMENTATION (a replaced implementation), or W_RULE_IMPLEMENTATION when the entry declares the rule
re-registered (`"re_registered": true`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from core.canonical import canonical_json
from engine.cards.format.lines import Located
from engine.cards.format.model import REGISTRY_FILE, Manifest, RuleEntry
from engine.cards.format.problems import Problem
from core.errors import ArtifactError
from engine.cards.bundle import Bundle
from engine.cards.rescore import Outcome, run_rule
from engine.cards.rule_table import all_rules
from engine.cards.rules import RULES

TEST_NUMBERS = ("baseline_mean", "deployed_mean", "delta_pp", "valid_for_aggregation")


def differences(recorded: Any, fresh: Any, path: str = "") -> Iterator[str]:
    """Dotted paths where two JSON values differ (exact: floats compare by their canonical text)."""
    if isinstance(recorded, dict) and isinstance(fresh, dict):
        for key in sorted(set(recorded) | set(fresh)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in recorded or key not in fresh:
                yield sub
            else:
                yield from differences(recorded[key], fresh[key], sub)
    elif isinstance(recorded, list) and isinstance(fresh, list) and len(recorded) == len(fresh):
        for i, (a, b) in enumerate(zip(recorded, fresh)):
            yield from differences(a, b, f"{path}[{i}]")
    elif canonical_json(recorded) != canonical_json(fresh):
        yield path or "<value>"


def _show(paths: list[str], recorded: Any, fresh: Any) -> str:
    first = paths[0]
    return f"{', '.join(paths[:4])}{' ...' if len(paths) > 4 else ''} (recorded {_at(recorded, first)}, " \
           f"recomputed {_at(fresh, first)})"


def _at(value: Any, path: str) -> str:
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            value = value[int(part[1:-1])] if isinstance(value, list) else None
        else:
            value = value.get(part) if isinstance(value, dict) else None
    text = canonical_json(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _entries(registry: Any) -> list[tuple[int, RuleEntry]]:
    out = []
    for i, raw in enumerate(registry if isinstance(registry, list) else []):
        try:
            out.append((i, RuleEntry.model_validate(raw)))
        except ValidationError:
            continue  # reported by engine.cards.format.scope.registry_problems
    return out


def recompute_rules(bundle: Bundle, registry: Any, drops: dict[str, Any], rows: dict[str, list[Located]]
                    ) -> tuple[list[Problem], dict[str, Outcome]]:
    all_rules()  # registers the built-in rules
    out: list[Problem] = []
    fresh: dict[str, Outcome] = {}
    for i, entry in _entries(registry):
        where = f"{REGISTRY_FILE}:rules[{i}]"
        rule = RULES.get(entry.name)
        if rule is None or rule.rule_id != entry.rule_id:
            out.append(Problem("W_RULE_UNKNOWN", where, f"rule {entry.rule_id!r} is not registered in this engine: "
                                                        "its numbers cannot be recomputed"))
            continue
        try:
            outcome = run_rule(bundle, entry.name, rows)
        except ArtifactError as exc:
            out.append(Problem("E_RULE_MISMATCH", where, f"rule {entry.rule_id!r} cannot be recomputed: {exc}"))
            continue
        fresh[entry.rule_id] = outcome
        recorded, now = entry.model_dump(mode="json"), outcome.entry.model_dump(mode="json")
        declared = bool(recorded.pop("re_registered", None))
        now.pop("re_registered", None)
        if recorded.pop("implementation") != now.pop("implementation"):
            out.append(Problem("W_RULE_IMPLEMENTATION" if declared else "E_RULE_IMPLEMENTATION", where,
                               f"rule {entry.rule_id!r} was recorded by code whose closure hash differs from this "
                               f"engine's{' (declared re-registered)' if declared else ''}"))
        diff = list(differences(recorded, now))
        if diff:
            out.append(Problem("E_RULE_MISMATCH", where, f"rule {entry.rule_id!r} recomputed from the streams "
                                                         f"differs in {_show(diff, recorded, now)}"))
        old_drops, new_drops = drops.get(entry.drops_manifest), outcome.drops.model_dump(mode="json")
        diff = list(differences(old_drops, new_drops)) if old_drops is not None else []
        if diff:
            out.append(Problem("E_DROPS_MISMATCH", entry.drops_manifest, f"the recomputed drops manifest differs "
                                                                         f"in {_show(diff, old_drops, new_drops)}"))
    return out, fresh


def headline_problems(manifest: Manifest, fresh: dict[str, Outcome], counts_required: bool = True
                      ) -> list[Problem]:
    """`counts_required`: the format version requires failure counts beside every headline (1.1 on)."""
    out: list[Problem] = []
    raw_test = manifest.run.get("test")
    test: dict[str, Any] = raw_test if isinstance(raw_test, dict) else {}
    for i, number in enumerate(manifest.reported):
        where = f"manifest.json:reported[{i}]"
        outcome = fresh.get(number.rule_id)
        if outcome is None:
            out.append(Problem("E_HEADLINE_UNVERIFIED", where, f"{number.name} names rule {number.rule_id!r}, "
                                                               "which this validator cannot recompute"))
            continue
        values, arms = outcome.result.values, outcome.result.arms
        if number.name not in values or canonical_json(values[number.name]) != canonical_json(number.value):
            out.append(Problem("E_HEADLINE_MISMATCH", where, f"{number.name}={canonical_json(number.value)} but "
                                                             f"{number.rule_id} recomputes "
                                                             f"{canonical_json(values.get(number.name))}"))
        recorded_arms = {k: v.model_dump(mode="json") for k, v in number.arms.items()}
        expected = {k: {"denominator": arms[k]["denominator"], "counts": arms[k]["counts"]} for k in recorded_arms
                    if k in arms}
        if arms and not recorded_arms and counts_required:
            out.append(Problem("E_HEADLINE_MISMATCH", where, f"{number.name} carries no failure counts beside it"))
        diff = list(differences(recorded_arms, expected))
        if diff:
            out.append(Problem("E_HEADLINE_MISMATCH", where, f"failure counts beside {number.name} differ from the "
                                                             f"recomputation in {_show(diff, recorded_arms, expected)}"))
        if number.source.startswith("result.json:test") and number.name in test and canonical_json(
                test[number.name]) != canonical_json(number.value):
            out.append(Problem("E_HEADLINE_MISMATCH", "manifest.json:run.test", f"run.test.{number.name}="
                                                                                f"{canonical_json(test[number.name])}"
                                                                                f" but reported "
                                                                                f"{canonical_json(number.value)}"))
    return out + _run_counts_problems(test, manifest, fresh)


def _run_counts_problems(test: dict[str, Any], manifest: Manifest, fresh: dict[str, Outcome]) -> list[Problem]:
    counts = test.get("failure_counts")
    rule_ids = {n.rule_id for n in manifest.reported if n.source.startswith("result.json:test")}
    if not isinstance(counts, dict) or len(rule_ids) != 1 or next(iter(rule_ids)) not in fresh:
        return []
    arms = fresh[next(iter(rule_ids))].result.arms
    expected = {k: arms[k]["counts"] for k in counts if k in arms}
    diff = list(differences(counts, expected))
    if diff:
        return [Problem("E_HEADLINE_MISMATCH", "manifest.json:run.test", f"failure_counts differ from the "
                                                                         f"recomputation in "
                                                                         f"{_show(diff, counts, expected)}")]
    return []


def _mean_of(rows: dict[str, list[Located]], evaluation_id: Any) -> float | None:
    """Evaluation.mean as the job computes it: scores (0 when unscored) in position order, over every rollout."""
    outcomes: dict[str, dict[str, Any]] = {}
    scores: dict[str, Any] = {}
    for loc in rows.get("annotations", []):
        r = loc.row
        if r.get("namespace") == "mpb.rollout":
            outcomes[str(r.get("target_id"))] = r.get("payload") or {}
        elif r.get("namespace") == "mpb.score":
            scores[str(r.get("target_id"))] = (r.get("payload") or {}).get("value")
    mine = sorted((p.get("position", 0), node) for node, p in outcomes.items()
                  if p.get("evaluation_id") == evaluation_id and p.get("phase") == "validation")
    values = [float(scores[node]) if isinstance(scores.get(node), (int, float)) else 0.0 for _, node in mine]
    return sum(values) / len(values) if values else None


def _superseded(mutations: list[Located], index: int) -> bool:
    """A phase.completed that a recovery by re-running replaced: a `job.recovery` mutation follows it and so does a
    later phase.completed of the same phase (which is checked instead). It summarized rollouts whose
    infrastructure failures were attempted again, so the streams no longer hold the numbers it saw."""
    phase = (mutations[index].row.get("new_value") or {}).get("phase")
    later = mutations[index + 1:]
    recovered = any(m.row.get("mutation_type") == "job.recovery" for m in later)
    return recovered and any(m.row.get("mutation_type") == "phase.completed"
                             and (m.row.get("new_value") or {}).get("phase") == phase for m in later)


def phase_problems(bundle: Bundle, rows: dict[str, list[Located]]) -> list[Problem]:
    """The numbers the job wrote into its phase.completed mutations agree with the streams: the validation means
    with their evaluations' rollouts, the test numbers and failure counts with the protocol rule."""
    out: list[Problem] = []
    mutations = rows.get("mutations", [])
    for index, loc in enumerate(mutations):
        new = loc.row.get("new_value") or {}
        if loc.row.get("mutation_type") != "phase.completed" or _superseded(mutations, index):
            continue
        expected: dict[str, Any] = {}
        if new.get("phase") == "validation":
            expected = {"baseline_mean": _mean_of(rows, new.get("baseline_evaluation_id"))}
            if new.get("candidate_evaluation_id") is not None:
                expected["incumbent_mean"] = _mean_of(rows, new.get("candidate_evaluation_id"))
        elif new.get("phase") == "test":
            result = run_rule(bundle, "mpb.protocol", rows).result
            expected = {k: result.values.get(k) for k in TEST_NUMBERS}
            expected["failure_counts"] = {arm: a["counts"] for arm, a in result.arms.items()}
        diff = [k for k in expected if k in new and canonical_json(new[k]) != canonical_json(expected[k])]
        if diff:
            out.append(Problem("E_PHASE_MISMATCH", loc.where, f"phase.completed {new.get('phase')}: "
                                                              f"{_show(diff, new, expected)} disagrees with the "
                                                              "rollouts it summarizes"))
    return out
