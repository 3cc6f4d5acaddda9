"""Redaction by field path (recorded in release_scope.omissions) and credential scrubbing (always on)."""

from __future__ import annotations

import json

import pytest

from core.errors import UsageError
from engine.cards.bundle import Bundle
from engine.cards.export import Redaction, export_card
from engine.cards.rescore import run_rule
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import StoreSpec, build_store, lines, manifest

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
    mirror = by_path[("mutations", "new_value.payload.final_output")]
    assert mirror["rows_affected"] == 50 and mirror["row_filter"] == "mutation_type == 'annotation.set'"
    assert all(e["payload"]["request"]["messages"] == {"$redacted": "pii"} for e in lines(bundle, "events"))
    data = all_bytes(bundle)
    assert b"Question q40" not in data and b"Adding the numbers" not in data
    # the protocol metric never needed the removed fields: it still reproduces result.json
    values = run_rule(bundle, "mpb.protocol").result.values
    assert values["deployed_mean"] == result["test"]["deployed_mean"]


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
        ("annotations", "payload.config.openai_api_key"), ("mutations", "new_value.payload.config.openai_api_key")}
    assert json.loads(bundle.files["manifest.json"])["run"]["run_id"] == "run-x"
