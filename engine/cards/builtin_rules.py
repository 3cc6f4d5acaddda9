"""Built-in reporting rules over this engine's cards.

Views they share, all read through the access-logging reader:
- the test phase: the latest `phase.completed` mutation with new_value.phase == "test" names the baseline and
  deployed evaluation ids and the ordered test example ids;
- an arm: the rollout nodes whose current `mpb.rollout` annotation has that evaluation id and phase, in
  `position` order; a rollout's score is its current `mpb.score` value (absent for infrastructure failures,
  which the protocol counts as 0, exactly like `Evaluation.scores`);
- the optimize phase: rollout nodes with an `mpb.rollout` annotation in phase optimize, plus the nodes the ledger
  skipped (status skipped, failure kind budget_exhausted; they carry no annotation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.cards.reader import CardReader, Footprint, Row
from engine.cards.rules import MissingField, Rule, RuleResult, register

USABLE = ("success", "semantic_failure")
AGGREGATE_COLLAPSES = ("containment_flattening", "concurrency_collapse")
TIMING_LOSS = {"loss_class": "timing_erased", "affected_analysis": "latency, wall-clock and makespan analyses",
               "declaration_kind": "author_declared", "reason": "the rule ignores started_at/completed_at and "
                                                               "latency_seconds"}
ATTRIBUTION_LOSS = {"loss_class": "attribution_loss", "affected_analysis": "per-agent and per-turn contribution",
                    "declaration_kind": "author_declared", "reason": "agent-turn nodes, events and edges are not read:"
                                                                     " one number per rollout"}
RETRY_LOSS = {"loss_class": "retry_history_erased", "affected_analysis": "infrastructure reliability per attempt",
              "declaration_kind": "author_declared", "reason": "only the final status of a rollout is read, not its "
                                                               "attempts"}


@dataclass(frozen=True)
class Rollout:
    node_id: str
    example_id: str | None
    phase: str | None
    status: str
    evaluation_id: str | None
    position: int
    budget_exhausted: bool
    score_row: Row | None

    @property
    def usable(self) -> bool:
        return self.status in USABLE and not self.budget_exhausted

    def score(self) -> float:
        """The protocol score: 0.0 when the scorer never produced a verdict (infrastructure failure)."""
        if self.score_row is None:
            return 0.0
        value = self.score_row.path("payload.value")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MissingField(f"mpb.score payload.value of {self.node_id!r} is {value!r}, not a number "
                               "(redacted or never recorded)")
        return float(value)


def test_phase(reader: CardReader) -> dict[str, Any] | None:
    found: Row | None = None
    for row in reader.mutations("phase.completed"):
        if row.path("new_value.phase") == "test":
            found = row
    if found is None:
        return None
    return {k: found.path(f"new_value.{k}") for k in ("baseline_evaluation_id", "deployed_evaluation_id",
                                                       "example_ids")}


def rollouts(reader: CardReader) -> list[Rollout]:
    scores = reader.latest_annotations("mpb.score")
    out = []
    for node, row in reader.latest_annotations("mpb.rollout").items():
        out.append(Rollout(node_id=node, example_id=row.path("payload.example_id"), phase=row.path("payload.phase"),
                           status=row.path("payload.status"), evaluation_id=row.path("payload.evaluation_id"),
                           position=int(row.path("payload.position", 0) or 0),
                           budget_exhausted=bool(row.path("payload.budget_exhausted", False)),
                           score_row=scores.get(node)))
    return out


def arm(all_rollouts: list[Rollout], evaluation_id: str, phase: str, fp: Footprint, label: str) -> list[Rollout]:
    kept = sorted((r for r in all_rollouts if r.evaluation_id == evaluation_id and r.phase == phase),
                  key=lambda r: r.position)
    fp.filter(f"mpb.rollout.payload.phase == '{phase}' and payload.evaluation_id == '{evaluation_id}'",
              len(all_rollouts) - len(kept), f"rows of the {label} evaluation only")
    return kept


def counts(rows: list[Rollout]) -> dict[str, int]:
    return {"n": len(rows), "usable": sum(r.usable for r in rows),
            "success": sum(r.status == "success" and not r.budget_exhausted for r in rows),
            "semantic_failures": sum(r.status == "semantic_failure" and not r.budget_exhausted for r in rows),
            "infrastructure_failures": sum(r.status == "infrastructure_failure" for r in rows),
            "budget_exhausted": sum(r.budget_exhausted for r in rows), "skipped": 0}


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _delta(base: float | None, dep: float | None) -> float | None:
    return None if base is None or dep is None else round(100.0 * (dep - base), 10)


def _arms(reader: CardReader, fp: Footprint) -> tuple[dict[str, Any], list[Rollout], list[Rollout]] | None:
    phase = test_phase(reader)
    if phase is None:
        return None
    everything = rollouts(reader)
    base = arm(everything, phase["baseline_evaluation_id"], "test", fp, "baseline")
    dep = arm(everything, phase["deployed_evaluation_id"], "test", fp, "deployed")
    return phase, base, dep


def paired_test_metric(reader: CardReader, fp: Footprint, config: Mapping[str, Any]) -> RuleResult:
    """Baseline and deployed test means and delta_pp. config.infrastructure: `as_wrong` (score 0, the protocol)
    or `exclude_pair` (drop every pair with an infrastructure failure in either arm); config.delta: `if_valid`
    (the protocol: null unless every row of both arms is usable) or `always`."""
    found = _arms(reader, fp)
    if found is None:
        return RuleResult("no_data", message="the card has no phase.completed mutation for phase 'test'")
    phase, base, dep = found
    valid = (all(r.usable for r in base) and all(r.usable for r in dep) and bool(base)
             and [r.example_id for r in base] == [r.example_id for r in dep] == list(phase["example_ids"] or []))
    if config["infrastructure"] == "exclude_pair":
        pairs = [(b, d) for b, d in zip(base, dep) if b.usable and d.usable]
        fp.filter("pairs where either arm is an infrastructure failure", len(base) - len(pairs),
                  "infrastructure failures excluded from the denominator")
        base_kept, dep_kept = [b for b, _ in pairs], [d for _, d in pairs]
    else:
        base_kept, dep_kept = base, dep
    base_mean = _mean([r.score() for r in base_kept])
    dep_mean = _mean([r.score() for r in dep_kept])
    delta = _delta(base_mean, dep_mean) if (valid or config["delta"] == "always") else None
    arms = {"baseline": {"evaluation_id": phase["baseline_evaluation_id"], "denominator": len(base_kept),
                         "counts": counts(base)},
            "deployed": {"evaluation_id": phase["deployed_evaluation_id"], "denominator": len(dep_kept),
                         "counts": counts(dep)}}
    return RuleResult("ok", {"baseline_mean": base_mean, "deployed_mean": dep_mean, "delta_pp": delta,
                             "valid_for_aggregation": valid}, arms)


def metadata_metric(reader: CardReader, fp: Footprint, config: Mapping[str, Any]) -> RuleResult:
    """Runner-metric variants: per arm, the mean of `mpb.score` fields named in config.fields (e.g. value,
    metadata.f1); infrastructure failures count 0 as in the protocol. When a usable scored row lacks a field the
    rule reports which field the card lacks instead of guessing."""
    job = reader.latest_annotations("mpb.job")
    task = next((row.path("payload.cell.task") for row in job.values()), None)
    if task != config["dataset"]:
        return RuleResult("not_applicable", message=f"rule is for dataset {config['dataset']!r}; the card's task is "
                                                    f"{task!r}")
    found = _arms(reader, fp)
    if found is None:
        return RuleResult("no_data", message="the card has no phase.completed mutation for phase 'test'")
    _, base, dep = found
    values: dict[str, Any] = {}
    for label, rows in (("baseline", base), ("deployed", dep)):
        for name, field_path in config["fields"].items():
            got: list[float] = []
            lacking = 0
            for r in rows:
                if r.score_row is None:
                    got.append(0.0)
                    continue
                value = r.score_row.path(f"payload.{field_path}")
                if value is None:
                    lacking += 1
                else:
                    got.append(float(value))
            if lacking:
                return RuleResult("missing_field", message=f"the card lacks mpb.score payload.{field_path} on "
                                                           f"{lacking} of {len(rows)} {label} test rows (the scorer "
                                                           "did not record it); cannot compute this metric")
            values[f"{label}_{name}"] = _mean(got)
    for name in config["fields"]:
        values[f"delta_{name}_pp"] = _delta(values[f"baseline_{name}"], values[f"deployed_{name}"])
    arms = {"baseline": {"denominator": len(base), "counts": counts(base)},
            "deployed": {"denominator": len(dep), "counts": counts(dep)}}
    return RuleResult("ok", values, arms)


def optimize_mean(reader: CardReader, fp: Footprint, config: Mapping[str, Any]) -> RuleResult:
    """Mean protocol score of the optimize-phase rollouts. Infrastructure failures are excluded (never charged);
    config.budget_exhausted: `exclude` or `as_wrong` (rows the ledger skipped count 0)."""
    everything = [r for r in rollouts(reader) if r.phase == "optimize"]
    skipped = 0
    for row in reader.mutations("node.status_changed"):
        if row.path("new_value.status") == "skipped" and row.path("new_value.failure.kind") == "budget_exhausted":
            skipped += 1
    infra = [r for r in everything if r.status == "infrastructure_failure"]
    usable = [r for r in everything if r.usable]
    fp.filter("mpb.rollout.payload.status == 'infrastructure_failure'", len(infra), "never charged, no score")
    scores = [r.score() for r in usable]
    if config["budget_exhausted"] == "as_wrong":
        scores += [0.0] * skipped
    else:
        fp.filter("nodes skipped with failure kind budget_exhausted", skipped, "not executed: outside the budget")
    row_counts = counts(everything)
    row_counts["budget_exhausted"] += skipped
    row_counts["n"] += skipped
    if not scores:
        return RuleResult("no_data", arms={"optimize": {"denominator": 0, "counts": row_counts}},
                          message="the card has no scored optimize-phase rollout")
    return RuleResult("ok", {"mean": _mean(scores)}, {"optimize": {"denominator": len(scores), "counts": row_counts}})


_TEST_STREAMS = ("annotations", "mutations")
register(Rule("mpb.protocol", "1", "original",
              "protocol metric of every dataset: mean mpb.score value of the baseline and deployed test evaluations "
              "(infrastructure failures count 0), delta_pp only when every row of both arms is usable",
              view="final_score", metric="test_delta_pp", input_streams=_TEST_STREAMS,
              config={"infrastructure": "as_wrong", "delta": "if_valid"}, compute=paired_test_metric,
              collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS, RETRY_LOSS)))
register(Rule("mpb.test.infra_as_wrong", "1", "regrade",
              "test means and delta_pp with infrastructure failures counted as wrong, delta reported even when "
              "the protocol marks the pair invalid",
              view="final_score", metric="test_delta_pp", input_streams=_TEST_STREAMS,
              config={"infrastructure": "as_wrong", "delta": "always"}, compute=paired_test_metric,
              collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS, RETRY_LOSS)))
register(Rule("mpb.test.infra_excluded", "1", "regrade",
              "test means and delta_pp over the pairs where neither arm is an infrastructure failure",
              view="final_score", metric="test_delta_pp", input_streams=_TEST_STREAMS,
              config={"infrastructure": "exclude_pair", "delta": "always"}, compute=paired_test_metric,
              collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS, RETRY_LOSS)))
register(Rule("mpb.optimize.budget_excluded", "1", "diagnostic",
              "mean score of optimize-phase rollouts, budget-exhausted rows excluded",
              view="final_score", metric="optimize_mean", input_streams=_TEST_STREAMS,
              config={"budget_exhausted": "exclude"}, compute=optimize_mean,
              collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS, RETRY_LOSS)))
register(Rule("mpb.optimize.budget_as_wrong", "1", "diagnostic",
              "mean score of optimize-phase rollouts, budget-exhausted rows counted as wrong",
              view="final_score", metric="optimize_mean", input_streams=_TEST_STREAMS,
              config={"budget_exhausted": "as_wrong"}, compute=optimize_mean,
              collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS, RETRY_LOSS)))
register(Rule("hotpotqa.em_f1", "1", "regrade", "HotpotQA runner metric: exact match and token F1 per arm",
              view="final_score", metric="em_f1", input_streams=_TEST_STREAMS,
              config={"dataset": "hotpotqa", "fields": {"em": "value", "f1": "metadata.f1"}},
              compute=metadata_metric, collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS)))
register(Rule("lcb.all_private_tests", "1", "regrade",
              "LiveCodeBench runner metric: a solution passes only when all private tests pass",
              view="final_score", metric="pass_rate", input_streams=_TEST_STREAMS,
              config={"dataset": "lcb", "fields": {"pass": "metadata.all_tests_passed"}},
              compute=metadata_metric, collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS)))
register(Rule("apps.first20_tests", "1", "regrade",
              "APPS runner metric: a solution passes when the first 20 tests pass",
              view="final_score", metric="pass_rate", input_streams=_TEST_STREAMS,
              config={"dataset": "apps", "fields": {"pass": "metadata.first20_passed"}},
              compute=metadata_metric, collapses=AGGREGATE_COLLAPSES, semantic_losses=(TIMING_LOSS, ATTRIBUTION_LOSS)))
