"""Communication formats: contracts, parsing, re-rendering (always well-formed, never rejecting)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.registry import get_benchmark
from core.communication import (CONTRACT_HEADER, FORMATS, CommunicationLog, ReportVocabulary,
                                append_format_contract,
                                format_contract, parse_report, render_handoff, render_report)



def vocab(dataset: str) -> ReportVocabulary:
    """The report vocabulary a dataset declares (its Benchmark.report_vocabulary)."""
    return get_benchmark(dataset).report_vocabulary


SEMI_OK = ("[STATUS]\ncompleted\n\n[SUMMARY]\nParis is the capital.\n\n[EVIDENCE_OR_TESTS]\nPage: France.\n\n"
           "[CONFIDENCE]\nhigh because the page says so\n\n[NEXT]\nUse it.\n\nAnswer: Paris")
JSON_OK = ('JSON_REPORT:\n{"status": "in_progress", "summary": "s", "confidence": "low", "next": "n", '
           '"payload": {"entities": ["x"]}}\nEND_JSON_REPORT\nAnswer: 3')


def test_freeform_is_the_control():
    assert format_contract("freeform", vocab("hotpotqa")) == ""
    assert append_format_contract("prompt", "freeform", vocab("lcb")) == "prompt"
    assert parse_report("anything", "freeform").ok
    assert render_handoff("a", "  text \n", "freeform") == "text"


def test_contracts_name_the_required_sections_and_dataset_tags():
    semi = format_contract("semi_structured", vocab("hotpotqa"))
    for tag in ("[STATUS]", "[SUMMARY]", "[EVIDENCE_OR_TESTS]", "[CONFIDENCE]", "[NEXT]", "[ANSWER_CANDIDATE]"):
        assert tag in semi
    assert "[APPROACH]" in format_contract("semi_structured", vocab("lcb"))
    assert "one sentence" in format_contract("semi_structured", vocab("apibank"))
    soft = format_contract("structured_soft", vocab("swe"))
    assert "JSON_REPORT:" in soft and "END_JSON_REPORT" in soft and "bug_location" in soft
    once = append_format_contract("p", "structured_soft", vocab("lcb"))
    assert once.startswith("p\n\n" + CONTRACT_HEADER)
    assert append_format_contract(once, "structured_soft", vocab("lcb")) == once
    with pytest.raises(ValueError):
        format_contract("xml", vocab("lcb"))


def test_semi_structured_parsing():
    assert parse_report(SEMI_OK, "semi_structured").ok
    missing = parse_report("[STATUS]\ncompleted\n[SUMMARY]\nx", "semi_structured")
    assert not missing.ok and "missing [NEXT]" in missing.errors
    bad = parse_report(SEMI_OK.replace("completed", "done"), "semi_structured")
    assert not bad.ok and any("invalid status" in e for e in bad.errors)


def test_structured_parsing_needs_all_keys_and_an_object_payload():
    assert parse_report(JSON_OK, "structured_soft").ok
    assert not parse_report("no report", "structured_soft").ok
    assert not parse_report("JSON_REPORT:\n{broken\nEND_JSON_REPORT", "structured_soft").ok
    no_payload = JSON_OK.replace('"payload": {"entities": ["x"]}', '"payload": [1]')
    assert "payload is not an object" in parse_report(no_payload, "structured_soft").errors
    missing = parse_report('JSON_REPORT:\n{"status": "completed"}\nEND_JSON_REPORT', "structured_soft")
    assert not missing.ok and "missing key 'payload'" in missing.errors


def test_handoff_passes_well_formed_reports_through_and_rerenders_the_rest():
    assert render_handoff("w", SEMI_OK, "semi_structured") == SEMI_OK.strip()
    assert render_handoff("w", JSON_OK, "structured_soft") == JSON_OK.strip()
    raw = "I think the answer is 42.\n[STATUS]\nAnswer: 42"
    semi = render_handoff("w", raw, "semi_structured")
    assert parse_report(semi, "semi_structured").ok and "Answer: 42" in semi
    soft = render_handoff("w", raw, "structured_soft")
    assert parse_report(soft, "structured_soft").ok and soft.endswith(raw)
    report = json.loads(soft.split("\n")[1])
    assert report["summary"] == "I think the answer is 42." and report["payload"]["sender"] == "w"


@given(st.text(max_size=300), st.sampled_from(FORMATS))
def test_rendering_always_parses(text, fmt):
    assert parse_report(render_report("agent", text, fmt), fmt).ok
    assert parse_report(render_handoff("agent", text, fmt), fmt).ok


def test_log_metadata_fields():
    log = CommunicationLog("structured_soft", vocab("lcb"))
    log.report("a.0", JSON_OK)
    log.report("b.0", "plain")
    shown = log.handoff("b", "plain")
    assert parse_report(shown, "structured_soft").ok
    meta = log.metadata()
    assert meta["communication_format"] == "structured_soft"
    assert meta["communication_parse_rate"] == 0.5 and meta["communication_all_parse_ok"] is False
    assert meta["communication_render_parse_rate"] == 1.0 and meta["communication_inflight_handoffs"] == 1
    prompt_only = CommunicationLog("semi_structured", vocab("swe"), rerender=False)
    assert prompt_only.handoff("a", "raw ") == "raw"
    assert prompt_only.metadata()["communication_render_parse_rate"] is None
    empty = CommunicationLog("freeform", vocab("gpqa")).metadata()
    assert empty["communication_parse_rate"] is None and empty["communication_all_parse_ok"] is True
