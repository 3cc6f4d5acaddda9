"""The validator catches each defect class: one corruption per check, asserting the exact problem code."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.cards.format.problems import errors
from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import build_store, lines, manifest, put_lines, reseal, rich_spec


@pytest.fixture(scope="module")
def rich_card(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = tmp_path_factory.mktemp("rich")
    build_store(run_dir / "card.sqlite", rich_spec())
    export_card(run_dir, run_dir / "card")
    return run_dir / "card"


def codes(bundle: Bundle) -> set[str]:
    return {p.code for p in validate_bundle(bundle)}


def test_rich_card_is_valid(rich_card):
    bundle = Bundle.load(rich_card)
    assert validate_bundle(bundle) == []
    man = manifest(bundle)
    assert man["blobs"]["count"] == 2 and man["streams"]["edges"]["rows"] == 3
    assert set(man["namespaces"]) == {"demo.big", "demo.outcome"}


def _edit_node(b: Bundle) -> None:
    rows = lines(b, "nodes")
    rows[1]["status"] = "completed" if rows[1]["status"] != "completed" else "failed"
    put_lines(b, "nodes", rows)
    reseal(b)


def _swap_events(b: Bundle) -> None:
    rows = lines(b, "events")
    rows[0], rows[1] = rows[1], rows[0]  # execution x0: sequence 1 before 0
    put_lines(b, "events", rows)
    reseal(b)


def _event_gap(b: Bundle) -> None:
    rows = lines(b, "events")
    put_lines(b, "events", [r for r in rows if not (r["task_execution_id"] == "x0" and r["sequence"] == 1)])
    reseal(b)


def _swap_mutations(b: Bundle) -> None:
    rows = lines(b, "mutations")
    rows[2], rows[3] = rows[3], rows[2]
    put_lines(b, "mutations", rows)
    reseal(b)


def _delete_mutation(b: Bundle) -> None:
    rows = lines(b, "mutations")
    put_lines(b, "mutations", rows[:4] + rows[5:])
    reseal(b)


def _cycle(b: Bundle) -> None:
    muts = lines(b, "mutations")
    edge = {"source_node_id": "n5", "target_node_id": "n3", "status": "satisfied"}
    at = muts[-1]["created_at"]
    muts.append({"sequence": len(muts), "run_id": "run-x", "mutation_type": "edge.added", "target_type": "edge",
                 "target_id": "n5->n3", "actor": "test", "old_value": None,
                 "new_value": {"mutation_type": "edge.added", **edge}, "reason": None, "created_at": at})
    put_lines(b, "mutations", muts)
    put_lines(b, "edges", [*lines(b, "edges"), {**edge, "run_id": "run-x", "created_at": at, "updated_at": at}])
    reseal(b)


def _missing_blob(b: Bundle) -> None:
    del b.files[next(n for n in sorted(b.files) if n.startswith("blobs/"))]
    reseal(b)


def _orphan_blob(b: Bundle) -> None:
    b.files["blobs/00/" + "0" * 64] = b"{}"
    reseal(b)


def _tamper_bytes(b: Bundle) -> None:
    b.files["events.jsonl"] = b.files["events.jsonl"].replace(b'"n":2', b'"n":3')


def _undeclare(b: Bundle) -> None:
    man = manifest(b)
    del man["namespaces"]["demo.outcome"]
    reseal(b, man)


def _truncate(b: Bundle) -> None:
    rows = lines(b, "events")
    rows[0]["payload"]["note"] = "the model said ... [truncated]"
    put_lines(b, "events", rows)
    reseal(b)


def _hide_failure_reason(b: Bundle) -> None:
    muts = lines(b, "mutations")
    for m in muts:
        if m["mutation_type"] == "node.status_changed" and m["new_value"]["status"] == "failed":
            m["reason"] = None
    put_lines(b, "mutations", muts)
    reseal(b)


def _row_schema(b: Bundle) -> None:
    rows = lines(b, "nodes")
    rows[2]["level"] = "1"
    put_lines(b, "nodes", rows)
    reseal(b)


def _dangling_parent(b: Bundle) -> None:
    rows = lines(b, "nodes")
    rows[3]["parent_id"] = "ghost"
    put_lines(b, "nodes", rows)
    reseal(b)


def _version(b: Bundle) -> None:
    reseal(b, {**manifest(b), "format_version": "2.0.0"})


def _missing_stream(b: Bundle) -> None:
    del b.files["edges.jsonl"]


def _drop_drops(b: Bundle) -> None:
    registry = [{"rule_id": "x@1", "name": "x", "kind": "diagnostic", "description": "d",
                 "implementation": {"ref": "m:f", "version": "1", "sha256": "0" * 64}, "config": {}, "view": "v",
                 "input_streams": ["annotations"], "output_target": {}, "drops_manifest": "drops/x@1.json"}]
    b.files["reporting_rules.json"] = json.dumps(registry).encode()
    reseal(b)


def _bad_drops(b: Bundle) -> None:
    _drop_drops(b)
    b.files["drops/x@1.json"] = json.dumps({
        "rule_id": "x@1", "filters": [], "collapses": [], "semantic_losses": [],
        "reads": [{"stream": "annotations", "namespace": "demo.outcome", "fields": ["no_such_column"],
                   "rows": {"count": 1}, "access": "observed"}]}).encode()
    reseal(b)


def _undeclared_redaction(b: Bundle) -> None:
    rows = lines(b, "events")
    rows[2]["payload"]["n"] = {"$redacted": "pii"}
    put_lines(b, "events", rows)
    reseal(b)


def _bad_json(b: Bundle) -> None:
    b.files["events.jsonl"] += b"{not json\n"
    reseal(b)


def _bad_discriminator(b: Bundle) -> None:
    rows = lines(b, "events")
    rows[0]["event_type"] = "tool_call"
    put_lines(b, "events", rows)
    reseal(b)


CASES: list[tuple[str, Callable[[Bundle], None], str]] = [
    ("edited row", _edit_node, "E_REPLAY_MISMATCH"),
    ("reordered events", _swap_events, "E_EVENT_SEQUENCE"),
    ("lost event", _event_gap, "E_EVENT_SEQUENCE_GAP"),
    ("reordered mutations", _swap_mutations, "E_MUTATION_SEQUENCE"),
    ("deleted mutation", _delete_mutation, "E_MUTATION_SEQUENCE"),
    ("cycle in edges", _cycle, "E_EDGE_CYCLE"),
    ("missing blob", _missing_blob, "E_BLOB_MISSING"),
    ("orphan blob", _orphan_blob, "E_BLOB_ORPHAN"),
    ("hash mismatch", _tamper_bytes, "E_HASH_MISMATCH"),
    ("undeclared namespace", _undeclare, "E_NAMESPACE_UNDECLARED"),
    ("truncated value", _truncate, "E_TRUNCATED"),
    ("failure without reason", _hide_failure_reason, "E_FAILURE_INVISIBLE"),
    ("row schema", _row_schema, "E_ROW_SCHEMA"),
    ("dangling parent", _dangling_parent, "E_REFERENCE"),
    ("major version", _version, "E_VERSION_UNSUPPORTED"),
    ("missing stream", _missing_stream, "E_LAYOUT_MISSING"),
    ("missing drops manifest", _drop_drops, "E_DROPS_MISSING"),
    ("drops names absent fields", _bad_drops, "E_DROPS_INVALID"),
    ("undeclared redaction", _undeclared_redaction, "E_RELEASE_SCOPE"),
    ("not JSON", _bad_json, "E_JSON"),
    ("discriminator", _bad_discriminator, "E_DISCRIMINATOR"),
]


@pytest.mark.parametrize(("name", "corrupt", "code"), CASES, ids=[c[0] for c in CASES])
def test_each_defect_is_caught(rich_card, name, corrupt, code):
    bundle = Bundle.load(rich_card)
    corrupt(bundle)
    found = codes(bundle)
    assert code in found, (name, sorted(found))
    assert errors(validate_bundle(bundle))


def test_single_edit_is_only_a_replay_mismatch(rich_card):
    bundle = Bundle.load(rich_card)
    _edit_node(bundle)
    assert codes(bundle) == {"E_REPLAY_MISMATCH"}
    bundle = Bundle.load(rich_card)
    _tamper_bytes(bundle)
    assert codes(bundle) == {"E_HASH_MISMATCH"}


def test_reported_number_must_be_reproduced(clean_job, tmp_path):
    run_dir, _ = clean_job
    bundle = export_card(run_dir)
    man = manifest(bundle)
    man["reported"][0]["value"] = 0.99
    reseal(bundle, man)
    assert "E_REGISTRY_INCOMPLETE" in codes(bundle)


def test_problem_locations_name_file_and_line(rich_card):
    bundle = Bundle.load(rich_card)
    _truncate(bundle)
    [problem] = [p for p in validate_bundle(bundle) if p.code == "E_TRUNCATED"]
    assert problem.location == "events.jsonl:1"


def test_append_only_against_a_previous_card(tmp_path):
    from engine.cards.validate import validate_path
    from tests.engine.cards.cardutil import StoreSpec

    spec = StoreSpec(parents=[None, 0], events=[(0, 1, {"n": 0})], annotations=[(1, "a.b", {"v": 1})],
                     run_status=None)
    build_store(tmp_path / "card.sqlite", spec)
    export_card(tmp_path, tmp_path / "early")
    more = StoreSpec(parents=[None, 0, 1], events=[(1, 2, {"n": 1})], annotations=[(1, "a.b", {"v": 2})],
                     run_status="completed")
    build_store(tmp_path / "card.sqlite", more)  # the same store, resumed: new rows appended
    export_card(tmp_path, tmp_path / "late")
    assert validate_path(tmp_path / "late", previous=tmp_path / "early") == []
    found = {p.code for p in validate_path(tmp_path / "early", previous=tmp_path / "late")}
    assert found == {"W_RUN_NOT_TERMINAL", "E_APPEND_ONLY"}
