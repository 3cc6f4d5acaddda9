"""Communication formats between agents (protocol-v1 section 3).

A format is applied in two places, both outside the editable prompt text:

1. `append_format_contract`: a reporting contract appended to every agent's system prompt;
2. `CommunicationLog.handoff`: before a receiver reads another agent's output, the output is re-rendered into
   the format, so receivers always read well-formed messages. A malformed report is never rejected or
   re-prompted: a report that parses is passed through unchanged, anything else is wrapped into a
   well-formed report that still carries the original text.

Formats: `freeform` (prompts and hand-offs unchanged, the control), `semi_structured` (tagged sections
[STATUS] [SUMMARY] [EVIDENCE_OR_TESTS] [CONFIDENCE] [NEXT] + optional dataset tags) and `structured_soft`
(one JSON object between `JSON_REPORT:` and `END_JSON_REPORT` with keys status, summary, confidence, next and
an object `payload`). The scorer-facing final artifact (the output contract) follows the report unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

FREEFORM, SEMI_STRUCTURED, STRUCTURED_SOFT = "freeform", "semi_structured", "structured_soft"
FORMATS = (FREEFORM, SEMI_STRUCTURED, STRUCTURED_SOFT)
REQUIRED_TAGS = ("STATUS", "SUMMARY", "EVIDENCE_OR_TESTS", "CONFIDENCE", "NEXT")
REPORT_KEYS = ("status", "summary", "confidence", "next", "payload")
STATUSES = ("not_started", "in_progress", "completed", "blocked")
CONFIDENCES = ("low", "medium", "high")
CONTRACT_HEADER = "INTER-AGENT COMMUNICATION FORMAT"
REPORT_START, REPORT_END = "JSON_REPORT:", "END_JSON_REPORT"



@dataclass(frozen=True)
class ReportVocabulary:
    """A dataset's additions to the report formats (a `Benchmark.report_vocabulary`): optional semi-structured
    tags, structured payload fields, and a note that replaces the optional-tags line when the dataset has one."""

    semi_tags: tuple[str, ...] = ()
    payload_fields: tuple[str, ...] = ()
    semi_note: str = ""


_TAG_LINE = re.compile(r"(?m)^\[([A-Z_]+)\][ \t]*$")
_REPORT_MARKER = re.compile(r"(?im)^[ \t]*JSON_REPORT[ \t]*:")
SUMMARY_CHARS = 300


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown communication format {fmt!r}; known: {', '.join(FORMATS)}")
    return fmt


# ---------------------------------------------------------------------------------------------- contracts

def format_contract(fmt: str, vocabulary: ReportVocabulary) -> str:
    """The reporting contract appended to every agent's system prompt ('' for freeform)."""
    check_format(fmt)
    if fmt == FREEFORM:
        return ""
    if fmt == SEMI_STRUCTURED:
        lines = [
            f"{CONTRACT_HEADER}:",
            "When you report to another agent (manager, worker, next stage or peer), begin with this tagged "
            "report, each tag alone on its line:",
            "[STATUS]\none of: " + ", ".join(STATUSES),
            "[SUMMARY]\nyour current result or decision, briefly",
            "[EVIDENCE_OR_TESTS]\nthe facts, checks or tests that support it",
            "[CONFIDENCE]\none of: " + ", ".join(CONFIDENCES) + ", with a short reason",
            "[NEXT]\nwhat the receiver should use or do next",
        ]
        if vocabulary.semi_note:
            lines.append(vocabulary.semi_note)
        elif vocabulary.semi_tags:
            lines.append("Optional tags when useful: " + " ".join(f"[{t}]" for t in vocabulary.semi_tags) + ".")
    else:
        lines = [
            f"{CONTRACT_HEADER}:",
            "When you report to another agent (manager, worker, next stage or peer), begin with exactly one JSON "
            f"object between a line '{REPORT_START}' and a line '{REPORT_END}', without code fences:",
            REPORT_START,
            '{"status": "completed", "summary": "...", "confidence": "medium", "next": "...", "payload": {}}',
            REPORT_END,
            "status is one of " + ", ".join(STATUSES) + "; confidence is one of " + ", ".join(CONFIDENCES)
            + "; payload is an object.",
        ]
        if vocabulary.payload_fields:
            lines.append("Payload fields when known: " + ", ".join(vocabulary.payload_fields) + ".")
    lines.append("If you give the final answer, put it AFTER the report, exactly as the protected output "
                 "contract requires.")
    return "\n".join(lines)


def append_format_contract(system_prompt: str, fmt: str, vocabulary: ReportVocabulary) -> str:
    contract = format_contract(fmt, vocabulary)
    if not contract or CONTRACT_HEADER in system_prompt:
        return system_prompt
    return f"{system_prompt.rstrip()}\n\n{contract}"


# ---------------------------------------------------------------------------------------------- parsing

@dataclass(frozen=True)
class ParsedReport:
    ok: bool
    fields: dict[str, Any]
    errors: tuple[str, ...] = ()


def _first_word(text: str) -> str:
    words = text.strip().split(None, 1)
    return words[0].lower().strip(".,;:") if words else ""


def _check_enums(status: str, confidence: str, errors: list[str]) -> None:
    if status and status not in STATUSES:
        errors.append(f"invalid status {status!r}")
    if confidence and confidence not in CONFIDENCES:
        errors.append(f"invalid confidence {confidence!r}")


def parse_semi_structured(text: str) -> ParsedReport:
    matches = list(_TAG_LINE.finditer(text))
    sections: dict[str, str] = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        sections.setdefault(match.group(1), text[match.end():end].strip())
    errors = [f"missing [{tag}]" for tag in REQUIRED_TAGS if not sections.get(tag)]
    _check_enums(_first_word(sections.get("STATUS", "")), _first_word(sections.get("CONFIDENCE", "")), errors)
    return ParsedReport(ok=not errors, fields={k.lower(): v for k, v in sections.items()}, errors=tuple(errors))


def parse_structured(text: str) -> ParsedReport:
    marker = _REPORT_MARKER.search(text)
    if marker is None:
        return ParsedReport(ok=False, fields={}, errors=(f"missing {REPORT_START}",))
    start = text.find("{", marker.end())
    if start < 0:
        return ParsedReport(ok=False, fields={}, errors=("missing JSON object after the marker",))
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        return ParsedReport(ok=False, fields={}, errors=(f"malformed JSON: {exc.msg}",))
    if not isinstance(obj, dict):
        return ParsedReport(ok=False, fields={}, errors=("the report is not a JSON object",))
    errors = [f"missing key {k!r}" for k in REPORT_KEYS if k not in obj]
    _check_enums(str(obj.get("status", "")).strip().lower(), str(obj.get("confidence", "")).strip().lower(),
                 errors)
    if "payload" in obj and not isinstance(obj["payload"], dict):
        errors.append("payload is not an object")
    return ParsedReport(ok=not errors, fields=obj, errors=tuple(errors))


def parse_report(text: str | None, fmt: str) -> ParsedReport:
    """Judge one agent's own message against the format (freeform always parses)."""
    check_format(fmt)
    raw = text or ""
    if fmt == FREEFORM:
        return ParsedReport(ok=True, fields={})
    if fmt == SEMI_STRUCTURED:
        return parse_semi_structured(raw)
    return parse_structured(raw)


# ---------------------------------------------------------------------------------------------- rendering

def _summary_of(raw: str) -> str:
    for line in raw.splitlines():
        line = line.strip()
        if line and not _TAG_LINE.match(line):
            return line if len(line) <= SUMMARY_CHARS else line[:SUMMARY_CHARS - 3] + "..."
    return "No substantive report was produced."


def _escape_tags(text: str) -> str:
    """Keep embedded tag lines from splitting the sections of the rendered report."""
    return _TAG_LINE.sub(lambda m: f"> [{m.group(1)}]", text)


def render_report(sender: str, text: str | None, fmt: str) -> str:
    """A well-formed report in `fmt` that carries `text` (used when the sender's own report does not parse)."""
    check_format(fmt)
    raw = (text or "").strip()
    if fmt == FREEFORM:
        return raw
    summary = _summary_of(raw)
    next_step = f"Use this report from {sender} as context for your own turn."
    if fmt == SEMI_STRUCTURED:
        evidence = _escape_tags(raw) if raw else "No evidence reported."
        return (f"[STATUS]\ncompleted\n\n[SUMMARY]\n{_escape_tags(summary)}\n\n[EVIDENCE_OR_TESTS]\n{evidence}\n\n"
                f"[CONFIDENCE]\nmedium\n\n[NEXT]\n{next_step}")
    report = {"status": "completed", "summary": summary, "confidence": "medium", "next": next_step,
              "payload": {"sender": sender, "original_report_parsed": False}}
    rendered = f"{REPORT_START}\n{json.dumps(report, ensure_ascii=False, sort_keys=True)}\n{REPORT_END}"
    return f"{rendered}\n{raw}" if raw else rendered


def render_handoff(sender: str, text: str | None, fmt: str) -> str:
    """What a receiver reads of `sender`'s output: unchanged if it already parses, else re-rendered."""
    if fmt == FREEFORM or parse_report(text, fmt).ok:
        return (text or "").strip()
    return render_report(sender, text, fmt)


# ---------------------------------------------------------------------------------------------- per rollout

@dataclass
class CommunicationLog:
    """Per-rollout accounting of reports and hand-offs; `metadata()` gives the output-metadata fields.

    `rerender=False` is the "prompt contract only" mode (Independent, and the topologies a dataset lists in
    `Benchmark.prompt_contract_only`): hand-offs pass the raw text through.
    """

    fmt: str
    vocabulary: ReportVocabulary = ReportVocabulary()
    rerender: bool = True
    reports: list[dict[str, Any]] = field(default_factory=list)
    renders_ok: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_format(self.fmt)

    def system_prompt(self, prompt: str) -> str:
        return append_format_contract(prompt, self.fmt, self.vocabulary)

    def report(self, agent: str, text: str | None) -> ParsedReport:
        """Record one agent's own report (call in a deterministic order)."""
        parsed = parse_report(text, self.fmt)
        self.reports.append({"agent": agent, "ok": parsed.ok, "errors": list(parsed.errors)})
        return parsed

    def handoff(self, sender: str, text: str | None) -> str:
        """Render `sender`'s output for a receiver and record whether the rendering parses."""
        if not self.rerender:
            return (text or "").strip()
        rendered = render_handoff(sender, text, self.fmt)
        self.renders_ok.append(parse_report(rendered, self.fmt).ok)
        return rendered

    def metadata(self) -> dict[str, Any]:
        n = len(self.reports)
        ok = sum(1 for r in self.reports if r["ok"])
        return {
            "communication_format": self.fmt,
            "communication_rerender": self.rerender,
            "communication_reports": [dict(r) for r in self.reports],
            "communication_parse_rate": (ok / n) if n else None,
            "communication_all_parse_ok": ok == n,
            "communication_inflight_handoffs": len(self.renders_ok),
            "communication_render_parse_rate": (sum(self.renders_ok) / len(self.renders_ok))
            if self.renders_ok else None,
        }
