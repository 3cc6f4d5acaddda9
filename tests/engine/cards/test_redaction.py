"""Redaction by field path (recorded in release_scope.omissions) and credential scrubbing (always on)."""

from __future__ import annotations

import json

import pytest

from core.errors import UsageError
from engine.cards.bundle import Bundle
from engine.cards.export import Redaction, export_card
from engine.cards.rescore import run_rule
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import StoreSpec, build_store, lines, manifest, store_rows

SECRET_KEY = "sk-live-0123456789abcdefABCDEF"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"


def all_bytes(bundle: Bundle) -> bytes:
    return b"\n".join(bundle.files.values())


def test_redacting_messages_and_outputs(clean_job, tmp_path):
    run_dir, result = clean_job
    reds = [Redaction.parse("events.payload.request.messages"), Redaction.parse("events.payload.response=license"),
            Redaction.parse("annotations.payload.final_output")]
    bundle = export_card(run_dir, tmp_path / "card", redactions=reds)
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    man = manifest(bundle)
    scope = man["release_scope"]
    assert scope["class"] == "redacted_trace"
    by_path = {(o["stream"], o["field_path"]): o for o in scope["omissions"]}
    n_events = man["streams"]["events"]["rows"]
    assert by_path[("events", "payload.request.messages")]["rows_affected"] == n_events
    assert by_path[("events", "payload.response")]["reason_code"] == "license"
    assert by_path[("annotations", "payload.final_output")]["rows_affected"] == 50
    # annotation payloads are stored once: their mutations hold a hash, not a second copy to redact
    assert all("payload" not in m["new_value"] and len(m["new_value"]["payload_sha256"]) == 64
               for m in lines(bundle, "mutations") if m["mutation_type"] == "annotation.set")
    assert all(e["payload"]["request"]["messages"] == {"$redacted": "pii"} for e in lines(bundle, "events"))
    data = all_bytes(bundle)
    assert b"Question q40" not in data and b"Adding the numbers" not in data and b"The sum is" not in data
    # the protocol metric never needed the removed fields: it still reproduces result.json
    values = run_rule(bundle, "mpb.protocol").result.values
    assert values["deployed_mean"] == result["test"]["deployed_mean"]


def test_redaction_follows_the_value_into_every_stream(clean_job, tmp_path):
    """Redacting only the final outputs also removes the same text from the model responses (and the system
    prompt's role text, redacted from the messages, from the bundle records), with counts the validator re-checks."""
    run_dir, _ = clean_job
    store = store_rows(run_dir / "card.sqlite")
    outputs = {a["payload"]["final_output"]["text"] for a in store["annotations"]
               if a["namespace"] == "mpb.rollout" and a["payload"].get("final_output")}
    assert outputs and all(len(t) >= 8 for t in outputs)
    in_responses = sum(1 for e in store["events"] if (e["payload"].get("response") or {}).get("content") in outputs)
    assert in_responses > 0
    bundle = export_card(run_dir, tmp_path / "card", redactions=[Redaction.parse("annotations.payload.final_output")])
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    data = all_bytes(bundle)
    assert not [t for t in outputs if t.encode() in data]
    by_path = {(o["stream"], o["field_path"]): o for o in manifest(bundle)["release_scope"]["omissions"]}
    followed = by_path[("events", "payload.response.content")]
    assert followed["rows_affected"] == in_responses and "followed" in followed["reason"]
    # the role text leaves the bundle records too when the messages that carry it are redacted
    role = next(iter(json.loads(bundle.files["bundles.jsonl"].splitlines()[0])["roles"].values()))
    redacted = export_card(run_dir, tmp_path / "card2", redactions=[Redaction.parse("events.payload.request.messages")])
    assert validate_bundle(Bundle.load(tmp_path / "card2")) == []
    assert role.encode() not in all_bytes(redacted)
    bundle_omissions = [o for o in manifest(redacted)["release_scope"]["omissions"] if o["stream"] == "bundles"]
    assert bundle_omissions and bundle_omissions[0]["rows_affected"] >= 1


def test_redact_path_errors():
    with pytest.raises(UsageError):
        Redaction.parse("events")
    with pytest.raises(UsageError):
        Redaction.parse("events.no_such_column")
    with pytest.raises(UsageError):
        Redaction.parse("events.payload=because")
    assert Redaction.parse("nodes.instance_key=safety").reason_code == "safety"


def test_credentials_never_reach_a_card(tmp_path):
    leaky = {"request": {"headers": {"Authorization": BEARER, "X-Api-Key": SECRET_KEY},
                         "messages": [{"role": "user", "content": f"use {SECRET_KEY} and {BEARER} please"}]},
             "api_key": SECRET_KEY, "client": {"access_token": "tok-1234567890", "client_secret": "hunter2"},
             "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
             "logprobs": [{"token": "Hello", "logprob": -0.25}]}
    spec = StoreSpec(parents=[None, 0], events=[(0, 1, leaky)],
                     annotations=[(1, "demo.call", {"config": {"openai_api_key": SECRET_KEY}, "value": 1})])
    build_store(tmp_path / "card.sqlite", spec)
    bundle = export_card(tmp_path, tmp_path / "card")
    data = all_bytes(Bundle.load(tmp_path / "card"))
    for secret in (SECRET_KEY.encode(), b"eyJhbGciOiJIUzI1NiJ9", b"tok-1234567890", b"hunter2"):
        assert secret not in data
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    [event] = lines(bundle, "events")
    payload = event["payload"]
    assert payload["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    assert payload["logprobs"] == [{"token": "Hello", "logprob": -0.25}]
    assert payload["api_key"] == {"$redacted": "safety"}
    assert payload["request"]["headers"]["Authorization"] == {"$redacted": "safety"}
    assert payload["request"]["messages"][0]["content"] == "use sk-[redacted] and Bearer [redacted] please"
    scope = manifest(bundle)["release_scope"]
    assert scope["class"] == "redacted_trace"
    assert {o["reason_code"] for o in scope["omissions"]} == {"safety"}
    assert {(o["stream"], o["field_path"]) for o in scope["omissions"]} >= {
        ("events", "payload.api_key"), ("events", "payload.request.headers.Authorization"),
        ("annotations", "payload.config.openai_api_key")}
    assert json.loads(bundle.files["manifest.json"])["run"]["run_id"] == "run-x"


def test_redacting_what_the_headline_needs_is_refused(clean_job, tmp_path, capsys):
    from engine.cards.cli import main

    run_dir, _ = clean_job
    assert main(["export", str(run_dir), "--out", str(tmp_path / "card"), "--redact", "annotations.payload.value"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mpb.protocol" in err[0] and "not a number" in err[0]
    assert not (tmp_path / "card").exists()
