"""Redaction keeps structure: removing message text, and the always-on credential scrub, never rewrite a tool's
schema (its `type`, names, JSON keys), even for parameters named like credentials; a credential value is still
removed. End to end on a 4-agent BFCL card: every recorded request's tools are exactly the tools offered."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import anyio
import pytest

from benchmarks.registry import get_benchmark
from engine.cards.bundle import Bundle
from engine.cards.export import Redaction, export_card
from engine.cards.format.model import REDACTED_KEY
from engine.cards.format.redact import scrub_secrets
from engine.cards.validate import validate_bundle
from engine.job.config import build_config
from engine.job.run_job import run_job
from tests.engine.cards.cardutil import lines

TOOL = {"type": "function", "function": {
    "name": "login", "description": "Log a user in.",
    "parameters": {"type": "object", "required": ["username", "password", "api_key"], "properties": {
        "username": {"type": "string", "description": "the user"},
        "password": {"type": "string", "description": "the user's password"},
        "api_key": {"type": ["string", "null"], "description": "a key"},
        "auth_token": {"type": "string"},
        "credentials": {"type": "object", "properties": {"secret": {"type": "str", "enum": ["a", "b"]}}},
        "client_secret": {"type": "dict", "description": "BFCL spells types its own way"}}}}}


def test_a_schema_with_credential_named_parameters_is_kept_whole():
    scrubbed, hits = scrub_secrets([copy.deepcopy(TOOL)])
    assert scrubbed == [TOOL] and not hits


@pytest.mark.parametrize("value", [{"api_key": "abc123def"}, {"password": "hunter2"},
                                   {"credentials": {"user": "u", "pass": "p"}},
                                   {"authorization": {"scheme": "basic", "value": "dTpw"}},
                                   {"secret": {"type": "bearer-token", "value": "v"}}])
def test_a_credential_value_is_still_removed(value):
    scrubbed, hits = scrub_secrets(value)
    [key] = value
    assert scrubbed[key] == {REDACTED_KEY: "safety"} and hits == {key}


@pytest.mark.slow
@pytest.mark.parametrize("team", ["topology=centralized,team_size=4", "topology=single"])
def test_a_redacted_multi_agent_bfcl_card_keeps_every_tool_schema(tmp_path: Path, team: str):
    """Centralized: the manager's hand-off tools (multi-agent BFCL renders the dataset's tools in text); single:
    the dataset's tools, sent natively."""
    cfg = build_config(cell=f"task=bfcl,{team}", method="gepa", seed=0,
                       out=str(tmp_path / "job"), budget=None, task_endpoints=None, model_id=None, data_dir=None,
                       concurrency=16, quiet=True, smoke=4)
    anyio.run(run_job, cfg)
    plain = {e["event_id"]: e["payload"]["request"] for e in lines(export_card(tmp_path / "job"), "events")}
    card = export_card(tmp_path / "job", tmp_path / "card",
                       redactions=[Redaction.parse("events.payload.request.messages=pii")])
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []
    bench = get_benchmark("bfcl")
    claims = {a["target_id"]: a["payload"] for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"}
    rows = {r.id: r for r in bench.load_rows(sorted({c["example_id"] for c in claims.values()}))}
    with_tools = answering = 0
    for event in lines(card, "events"):
        request = event["payload"]["request"]
        assert request["messages"] == {REDACTED_KEY: "pii"}
        # the tools (the dataset's and the topology's hand-off tools) exactly as sent, byte for byte
        assert json.dumps(request.get("tools"), sort_keys=True) == \
            json.dumps(plain[event["event_id"]].get("tools"), sort_keys=True)
        claim = claims.get(event["task_execution_id"].split("#")[0])
        if claim is None:  # the optimizer's reflection calls belong to no rollout
            continue
        offered = bench.native_tools(rows[claim["example_id"]])
        names = {t["function"]["name"] for t in request.get("tools") or []}
        with_tools += bool(names)
        if offered and {t["function"]["name"] for t in offered} <= names:
            answering += 1
            assert all(t in request["tools"] for t in offered)
    assert with_tools > 0 and (answering > 0 or "centralized" in team)
