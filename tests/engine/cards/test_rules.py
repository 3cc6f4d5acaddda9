"""Reporting rules on cards built to exercise them: runner-metric variants (present and missing scorer fields),
budget-exhausted handling, and the access-logging reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from core.errors import UsageError
from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.reader import CardReader
from engine.cards.rescore import apply_rule, run_rule
from engine.cards.rule_table import all_rules, get_rule
from engine.cards.validate import validate_bundle
from engine.store import Store

RUN = "run/r1"


async def _rollout(store: Store, node: str, phase: str, status: str, position: int, evaluation_id: str | None,
                   score: dict[str, Any] | None) -> None:
    """What engine.runner writes for one finished rollout."""
    def op(conn: Any) -> None:
        store.op_node(conn, node_id=node, parent_id=RUN, instance_key=f"q{position}", task_key=phase,
                      status="running", worker_key=None, level=1, actor="engine:runner")
        if score is not None:
            store.op_annotation(conn, "node", node, "mpb.score", score, actor="engine:scorer")
        store.op_annotation(conn, "node", node, "mpb.rollout",
                            {"status": status, "example_id": f"q{position}", "phase": phase,
                             "evaluation_id": evaluation_id, "position": position, "budget_exhausted": False},
                            actor="engine:runner")
        usable = status != "infrastructure_failure"
        store.op_status(conn, node, "completed" if usable else "failed", actor="engine:runner",
                        reason=None if usable else "HTTP 500")

    await store.write(op)


async def _skipped(store: Store, node: str) -> None:
    def op(conn: Any) -> None:
        store.op_node(conn, node_id=node, parent_id=RUN, instance_key="qx", task_key="optimize", status="pending",
                      worker_key=None, level=1, actor="engine:runner")
        store.op_status(conn, node, "skipped", actor="engine:ledger", reason="rollout budget exhausted",
                        extra={"failure": {"kind": "budget_exhausted", "message": "rollout budget exhausted"}})

    await store.write(op)


def build(run_dir: Path, task: str, test_scores: list[dict[str, Any] | None], optimize: list[float | None],
          skipped: int) -> None:
    async def go() -> None:
        async with Store(run_dir / "card.sqlite", run_id="r1") as store:
            await store.add_node(node_id=RUN, parent_id=None, instance_key="r1", task_key="job", status="running",
                                 worker_key=None, level=0, actor="engine:job")
            await store.annotate("node", RUN, "mpb.job", {"cell": {"task": task}}, actor="engine:job")
            for i, value in enumerate(optimize):
                status = "infrastructure_failure" if value is None else "success" if value else "semantic_failure"
                await _rollout(store, f"opt/{i}", "optimize", status, i, None,
                               None if value is None else {"value": value, "metadata": {}})
            for i in range(skipped):
                await _skipped(store, f"opt/skip{i}")
            for arm in ("base", "dep"):
                for i, score in enumerate(test_scores):
                    status = ("infrastructure_failure" if score is None
                              else "success" if score["value"] else "semantic_failure")
                    await _rollout(store, f"test/{arm}/{i}", "test", status, i, arm, score)
            await store.mutate("phase.completed", "run", "r1", actor="engine:job",
                               new={"phase": "test", "baseline_evaluation_id": "base", "deployed_evaluation_id": "dep",
                                    "example_ids": [f"q{i}" for i in range(len(test_scores))]})
            await store.set_node_status(RUN, "completed", actor="engine:job", reason="job finished")

    anyio.run(go)


def card(tmp_path: Path, **kw: Any) -> Bundle:
    build(tmp_path, **kw)
    bundle = export_card(tmp_path, tmp_path / "card")
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    return bundle


def test_hotpotqa_em_and_f1(tmp_path):
    scores = [{"value": 1.0, "metadata": {"f1": 1.0}}, {"value": 0.0, "metadata": {"f1": 0.5}},
              {"value": 0.0, "metadata": {"f1": 0.25}}, None]
    bundle = card(tmp_path, task="hotpotqa", test_scores=scores, optimize=[], skipped=0)
    outcome = apply_rule(bundle, "hotpotqa.em_f1")
    assert outcome.result.status == "ok"
    assert outcome.result.values["deployed_em"] == 0.25
    assert outcome.result.values["deployed_f1"] == (1.0 + 0.5 + 0.25 + 0.0) / 4
    assert outcome.result.values["delta_f1_pp"] == 0.0
    assert outcome.result.arms["deployed"]["counts"]["infrastructure_failures"] == 1
    reads = {(r.stream, r.namespace): r.fields for r in outcome.drops.reads}
    assert "payload.metadata.f1" in reads[("annotations", "mpb.score")]
    assert validate_bundle(bundle) == []


def test_runner_metric_reports_missing_scorer_field(tmp_path):
    scores = [{"value": 1.0, "metadata": {"kind": "pass"}}, {"value": 0.0, "metadata": {"kind": "wrong_answer"}}]
    bundle = card(tmp_path, task="lcb", test_scores=scores, optimize=[], skipped=0)
    result = run_rule(bundle, "lcb.all_private_tests").result
    assert result.status == "missing_field" and result.values == {}
    assert "payload.metadata.all_tests_passed" in (result.message or "")
    assert run_rule(bundle, "apps.first20_tests").result.status == "not_applicable"
    protocol = run_rule(bundle, "mpb.protocol").result  # the protocol metric of the same card still works
    assert protocol.values["deployed_mean"] == 0.5 and protocol.values["delta_pp"] == 0.0


def test_budget_exhausted_excluded_vs_counted(tmp_path):
    bundle = card(tmp_path, task="gpqa", test_scores=[{"value": 1.0}], optimize=[1.0, 0.0, 1.0, None], skipped=2)
    excluded = run_rule(bundle, "mpb.optimize.budget_excluded").result
    counted = run_rule(bundle, "mpb.optimize.budget_as_wrong").result
    assert excluded.values["mean"] == 2 / 3 and excluded.arms["optimize"]["denominator"] == 3
    assert counted.values["mean"] == 2 / 5 and counted.arms["optimize"]["denominator"] == 5
    counts = counted.arms["optimize"]["counts"]
    assert counts["budget_exhausted"] == 2 and counts["infrastructure_failures"] == 1 and counts["n"] == 6


def test_reader_logs_only_what_was_read(tmp_path):
    bundle = card(tmp_path, task="gpqa", test_scores=[{"value": 1.0}], optimize=[], skipped=0)
    reader = CardReader(bundle)
    [row] = [r for r in reader.rows("nodes") if r["node_id"] == RUN]
    assert row["level"] == 0
    reads = reader.reads()
    assert [(r.stream, r.fields, r.rows.count) for r in reads] == [("nodes", ["level", "node_id"], 3)]


def test_registry():
    names = [r.name for r in all_rules()]
    assert {"mpb.protocol", "mpb.test.infra_excluded", "mpb.test.infra_as_wrong", "mpb.optimize.budget_excluded",
            "mpb.optimize.budget_as_wrong", "hotpotqa.em_f1", "lcb.all_private_tests", "apps.first20_tests"} <= set(
        names)
    rule = get_rule("mpb.protocol@1")
    impl = rule.implementation()
    assert impl["ref"] == "engine.cards.builtin_rules:paired_test_metric" and len(impl["sha256"]) == 64
    with pytest.raises(UsageError):
        get_rule("mpb.protocol@9")


def test_implementation_hash_covers_each_rules_own_code_closure():
    from engine.cards.builtin_rules import optimize_mean, paired_test_metric
    from engine.cards.rules import code_closure

    test_closure, optimize_closure = code_closure(paired_test_metric), code_closure(optimize_mean)
    assert "engine.cards.builtin_rules:_delta" in test_closure and "engine.cards.builtin_rules:arm" in test_closure
    assert "engine.cards.builtin_rules:_delta" not in optimize_closure  # an edit to _delta leaves it unchanged
    assert "engine.cards.reader" in test_closure and "engine.cards.reader" in optimize_closure
    hashes = {r.rule_id: r.implementation()["sha256"] for r in all_rules()}
    assert len(set(hashes.values())) == len(hashes)  # no two rules share one hash
