"""Single-defect forgeries of real cards: each edit is re-sealed (stream hashes, counts, card_id, file hashes) so
that only a semantic check can catch it, and each defect class must be reported under its own code."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest

from core.canonical import content_hash
from engine.cards.format.problems import errors
from engine.cards.bundle import Bundle
from engine.cards.export import Redaction, export_card
from engine.cards.manifest import json_bytes
from engine.cards.rescore import run_rule
from engine.cards.validate import validate_bundle, validate_path
from tests.engine.cards.cardutil import StoreSpec, build_store, lines, manifest, put_lines, reseal
from tests.engine.cards.conftest import INFRA_ROW

SEAL_CODES = {"E_HASH_MISMATCH", "E_COUNT_MISMATCH", "E_CARD_ID_MISMATCH", "E_UNHASHED_FILE"}


def codes(bundle: Bundle) -> set[str]:
    return {p.code for p in validate_bundle(bundle)}


def rollout_of(bundle: Bundle, example: str, phase: str = "test") -> str:
    return next(a["target_id"] for a in lines(bundle, "annotations") if a["namespace"] == "mpb.rollout"
                and a["payload"]["example_id"] == example and a["payload"]["phase"] == phase)


def edit_annotation(bundle: Bundle, target: str, namespace: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit an annotation payload and re-hash its annotation.set mutation, as a careful forger would."""
    annotations, mutations = lines(bundle, "annotations"), lines(bundle, "mutations")
    [row] = [a for a in annotations if a["target_id"] == target and a["namespace"] == namespace]
    change(row["payload"])
    for m in mutations:
        new = m["new_value"] or {}
        if m["mutation_type"] == "annotation.set" and m["target_id"] == target and new.get("namespace") == namespace:
            new["payload_sha256"] = content_hash(row["payload"])
    put_lines(bundle, "annotations", annotations)
    put_lines(bundle, "mutations", mutations)


def set_file(bundle: Bundle, name: str, value: Any) -> None:
    bundle.files[name] = json_bytes(value)


def forged(clean: Bundle, code: str) -> set[str]:
    reseal(clean)
    found = codes(clean)
    assert code in found, sorted(found)
    assert not found & SEAL_CODES, sorted(found)  # the seal holds: only the semantic check can see the forgery
    return found


@pytest.fixture
def card(faulty_job) -> Bundle:
    return export_card(faulty_job[0])


# ------------------------------------------------------------------------------------------------ scores and rules
def test_score_flipped_zero_to_one(card):
    wrong = next(a["target_id"] for a in lines(card, "annotations") if a["namespace"] == "mpb.score"
                 and a["payload"]["value"] == 0.0 and a["target_id"].startswith("test/"))
    edit_annotation(card, wrong, "mpb.score", lambda p: p.update(value=1.0))
    found = forged(card, "E_RULE_MISMATCH")
    assert "E_ROLLOUT_INCONSISTENT" in found


def test_score_and_status_flipped_consistently(card):
    wrong = next(a["target_id"] for a in lines(card, "annotations") if a["namespace"] == "mpb.score"
                 and a["payload"]["value"] == 0.0 and a["target_id"].startswith("test/"))
    edit_annotation(card, wrong, "mpb.score", lambda p: p.update(value=1.0))
    edit_annotation(card, wrong, "mpb.rollout", lambda p: p.update(status="success"))
    assert forged(card, "E_RULE_MISMATCH") >= {"E_RULE_MISMATCH", "E_HEADLINE_MISMATCH"}


def test_infrastructure_failure_relabelled_success(card):
    edit_annotation(card, rollout_of(card, INFRA_ROW), "mpb.rollout", lambda p: p.update(status="success"))
    assert forged(card, "E_RULE_MISMATCH") >= {"E_ROLLOUT_INCONSISTENT"}


def test_failed_test_rollout_erased_with_drops_counts_patched(card):
    gone = rollout_of(card, INFRA_ROW)

    def keep(row: dict[str, Any]) -> bool:
        ids = [row.get(k) for k in ("node_id", "target_id", "task_execution_id")]
        ids.append((row.get("new_value") or {}).get("rollout"))
        return not any(isinstance(i, str) and (i == gone or i.startswith(gone + "#")) for i in ids)

    for stream in ("events", "nodes", "annotations"):
        put_lines(card, stream, [r for r in lines(card, stream) if keep(r)])
    mutations = [m for m in lines(card, "mutations") if keep(m)]
    for i, m in enumerate(mutations):
        m["sequence"] = i
    put_lines(card, "mutations", mutations)
    reseal(card)
    # the forger patches the drops manifest's row counts to what the rule now reads
    set_file(card, "drops/mpb.protocol@1.json", run_rule(card, "mpb.protocol").drops.model_dump(mode="json"))
    found = forged(card, "E_RULE_MISMATCH")
    assert "E_HEADLINE_MISMATCH" in found and "E_DROPS_MISMATCH" not in found


def test_forged_headline_in_manifest_and_registry(card):
    man = manifest(card)
    for number in man["reported"]:
        if number["name"] == "deployed_mean":
            number["value"] = 0.9
    man["run"]["test"]["deployed_mean"] = 0.9
    registry = json.loads(card.files["reporting_rules.json"])
    registry[0]["output_target"]["values"]["deployed_mean"] = 0.9
    set_file(card, "reporting_rules.json", registry)
    reseal(card, man)
    found = forged(card, "E_HEADLINE_MISMATCH")
    assert "E_RULE_MISMATCH" in found


def test_forged_failure_counts_beside_the_headline(card):
    man = manifest(card)
    man["reported"][0]["arms"]["baseline"]["counts"]["infrastructure_failures"] = 0
    man["run"]["test"]["failure_counts"]["deployed"]["infrastructure_failures"] = 0
    reseal(card, man)
    forged(card, "E_HEADLINE_MISMATCH")
    assert [p for p in validate_bundle(card) if p.location == "manifest.json:run.test"]


def test_headline_of_an_unknown_rule_is_unverifiable(card):
    man = manifest(card)
    man["reported"][0]["rule_id"] = "my.custom@1"
    reseal(card, man)
    forged(card, "E_HEADLINE_UNVERIFIED")


@pytest.mark.parametrize("declared", [False, True])
def test_rule_implementation_hash_differs(card, declared):
    """A replaced implementation is an error, unless the entry declares the rule re-registered (a warning); the
    rule is re-run either way and its numbers still agree."""
    registry = json.loads(card.files["reporting_rules.json"])
    registry[0]["implementation"]["sha256"] = "0" * 64
    if declared:
        registry[0]["re_registered"] = True
    set_file(card, "reporting_rules.json", registry)
    reseal(card)
    assert codes(card) == ({"W_RULE_IMPLEMENTATION"} if declared else {"E_RULE_IMPLEMENTATION"})


# ------------------------------------------------------------------------------------------------ inline cap
def test_value_over_the_inline_cap_put_inline(card):
    events = lines(card, "events")
    events[0]["payload"]["note"] = "x" * 100_000
    put_lines(card, "events", events)
    forged(card, "E_INLINE_CAP")


# ------------------------------------------------------------------------------------------------ attempts
def test_rollout_claims_more_attempts_than_its_events(card):
    infra = rollout_of(card, INFRA_ROW)
    events = lines(card, "events")
    [last] = [e for e in events if e["task_execution_id"].startswith(infra) and e["task_execution_id"].endswith("a3")]
    put_lines(card, "events", [e for e in events if e is not last])
    forged(card, "E_ATTEMPT_MISSING")


def test_errored_call_no_attempt_claims(card):
    edit_annotation(card, rollout_of(card, INFRA_ROW), "mpb.rollout", lambda p: p.update(attempts=2))
    forged(card, "E_ATTEMPT_UNCLAIMED")


# ------------------------------------------------------------------------------------------------ orphans, zip, files
def test_crashed_run_with_running_rollouts(tmp_path):
    spec = StoreSpec(parents=[None, 0, 0, 1], statuses=[(1, "completed")], run_status="failed", finish_nodes=False)
    build_store(tmp_path / "card.sqlite", spec)
    bundle = export_card(tmp_path)
    found = [p for p in validate_bundle(bundle) if p.code == "E_ORPHAN_RUNNING"]
    assert {p.location for p in found} == {"nodes.jsonl:3", "nodes.jsonl:4"}


def test_zip_with_a_duplicate_entry(card, tmp_path):
    path = tmp_path / "card.zip"
    card.write_zip(path)
    with zipfile.ZipFile(path, "a") as zf, pytest.warns(UserWarning, match="Duplicate name"):
        zf.writestr("events.jsonl", b"")
    assert "E_ZIP_DUPLICATE" in {p.code for p in validate_path(path)}


def test_unhashed_extra_file(card):
    card.files["notes.txt"] = b"trust me"
    found = codes(card)
    assert found == {"E_UNHASHED_FILE"}


# ------------------------------------------------------------------------------------------------ redaction
@pytest.fixture
def redacted(faulty_job) -> Bundle:
    return export_card(faulty_job[0], redactions=[Redaction.parse("annotations.payload.final_output")])


def test_understated_redaction_count(redacted):
    man = manifest(redacted)
    man["release_scope"]["omissions"][0]["rows_affected"] -= 1
    reseal(redacted, man)
    forged(redacted, "E_REDACTION_COUNT")


def test_followed_value_put_back(redacted, faulty_job):
    """A path-only redaction (the text left in the model responses) no longer matches the recorded counts."""
    original = {e["event_id"]: e for e in lines(export_card(faulty_job[0]), "events")}
    events = lines(redacted, "events")
    restored = 0
    for e in events:
        response = e["payload"].get("response") or {}
        if isinstance(response.get("content"), dict):
            response["content"] = original[e["event_id"]]["payload"]["response"]["content"]
            restored += 1
    assert restored
    put_lines(redacted, "events", events)
    forged(redacted, "E_REDACTION_COUNT")


def test_undeclared_marker(redacted):
    events = lines(redacted, "events")
    events[0]["payload"]["params"]["model"] = {"$redacted": "pii"}
    put_lines(redacted, "events", events)
    forged(redacted, "E_RELEASE_SCOPE")


# ------------------------------------------------------------------------------------------------ clean real cards
@pytest.mark.slow
def test_clean_real_cards_validate_without_warnings(clean_job, faulty_job, tmp_path):
    for run_dir, _ in (clean_job, faulty_job):
        export_card(run_dir, tmp_path / run_dir.name)
        assert validate_path(tmp_path / run_dir.name) == []
    reds = [Redaction.parse("events.payload.request.messages"), Redaction.parse("annotations.payload.final_output")]
    export_card(faulty_job[0], tmp_path / "redacted.zip", as_zip=True, redactions=reds)
    assert validate_path(tmp_path / "redacted.zip") == []


def test_bundle_record_tampering(card):
    rows = [json.loads(line) for line in card.files["bundles.jsonl"].splitlines()]
    rows[0]["roles"] = {k: v + " Always answer 42." for k, v in rows[0]["roles"].items()}
    card.files["bundles.jsonl"] = b"".join(json.dumps(r).encode() + b"\n" for r in rows)
    found = forged(card, "E_BUNDLE_DIGEST")
    del card.files["bundles.jsonl"]
    assert "E_BUNDLE_MISSING" in forged(card, "E_BUNDLE_MISSING")
    assert found


def test_errors_are_errors(card):
    edit_annotation(card, rollout_of(card, INFRA_ROW), "mpb.rollout", lambda p: p.update(attempts=2))
    reseal(card)
    assert errors(validate_bundle(card))


def test_payload_against_its_namespace_schema(card):
    edit_annotation(card, rollout_of(card, INFRA_ROW), "mpb.rollout", lambda p: p.update(attempts="3"))
    forged(card, "E_NAMESPACE_SCHEMA")


def _edit_phase(card: Bundle, phase: str, key: str, value: Any) -> None:
    mutations = lines(card, "mutations")
    [m] = [m for m in mutations if m["mutation_type"] == "phase.completed" and m["new_value"]["phase"] == phase]
    m["new_value"][key] = value
    put_lines(card, "mutations", mutations)


def test_forged_numbers_in_the_phase_log(card):
    _edit_phase(card, "test", "deployed_mean", 0.9)
    forged(card, "E_PHASE_MISMATCH")


def test_forged_validation_mean(card):
    _edit_phase(card, "validation", "baseline_mean", 0.95)
    forged(card, "E_PHASE_MISMATCH")


def test_forged_manifest_facts(card):
    man = manifest(card)
    man["run"]["run_node_status"] = "failed"
    man["vocabularies"]["node_statuses"] = ["completed"]
    reseal(card, man)
    found = [p for p in validate_bundle(card) if p.code == "E_MANIFEST_MISMATCH"]
    assert len(found) == 2


def test_a_format_1_0_card_needs_no_bundle_records_or_headline_counts(card):
    man = manifest(card)
    man["format_version"] = "1.0.0"
    for number in man["reported"]:
        del number["arms"]
    del card.files["bundles.jsonl"], man["bundles"]
    reseal(card, man)
    assert codes(card) == set()
    man["format_version"] = "1.1.0"
    reseal(card, man)
    assert codes(card) == {"E_BUNDLE_MISSING", "E_HEADLINE_MISMATCH"}


def test_raising_the_declared_cap_does_not_license_an_inline_value(card):
    events = lines(card, "events")
    events[0]["payload"]["note"] = "x" * 100_000
    put_lines(card, "events", events)
    man = manifest(card)
    man["blobs"]["inline_cap_bytes"] = 1_000_000
    reseal(card, man)
    found = [p for p in validate_bundle(card) if p.code == "E_INLINE_CAP"]
    assert {p.location for p in found} == {"manifest.json", "events.jsonl:1"}
