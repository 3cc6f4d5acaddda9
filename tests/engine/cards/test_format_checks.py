"""Pure card checks over in-memory rows: replay, acyclicity at every step, sequences, redaction, lines."""

from __future__ import annotations

from typing import Any

from engine.cards.format.checks import check_rows, event_sequence_problems, mutation_sequence_problems, same
from engine.cards.format.lines import Located, decode_lines, encode_lines
from engine.cards.format.redact import redact_path, scrub_secrets
from engine.cards.format.replay import replay

T = "2026-01-01T00:00:00.000Z"


def mut(seq: int, kind: str, target: str, new: dict[str, Any] | None, old: dict[str, Any] | None = None,
        reason: str | None = None, target_type: str = "node") -> Located:
    return Located(f"mutations.jsonl:{seq + 1}", {
        "sequence": seq, "run_id": "r", "mutation_type": kind, "target_type": target_type, "target_id": target,
        "actor": "t", "old_value": None if old is None else {"mutation_type": kind, **old},
        "new_value": None if new is None else {"mutation_type": kind, **new}, "reason": reason, "created_at": T})


def node_added(seq: int, node: str, parent: str | None, level: int) -> Located:
    return mut(seq, "node.added", node, {"parent_id": parent, "instance_key": node, "task_key": "k",
                                         "status": "running", "assigned_worker_key": None, "level": level})


def edge_added(seq: int, s: str, t: str) -> Located:
    return mut(seq, "edge.added", f"{s}->{t}", {"source_node_id": s, "target_node_id": t, "status": "satisfied"},
               target_type="edge")


def test_replay_reproduces_state_and_catches_transient_cycles():
    log = [node_added(0, "a", None, 0), node_added(1, "b", "a", 1), node_added(2, "c", "a", 1),
           edge_added(3, "b", "c"), edge_added(4, "c", "b"),
           mut(5, "edge.removed", "c->b", None, {"source_node_id": "c", "target_node_id": "b"}, target_type="edge"),
           mut(6, "node.status_changed", "b", {"status": "failed"}, {"status": "running"}, reason="boom")]
    state, problems = replay(log)
    # the cycle existed between sequence 4 and 5: caught although the final edge set is acyclic
    assert [p.code for p in problems] == ["E_EDGE_CYCLE"] and problems[0].location == "mutations.jsonl:5"
    assert set(state.edges) == {("b", "c")}
    assert state.nodes["b"]["status"] == "failed" and state.nodes["b"]["level"] == 1


def test_replay_rejects_stale_old_values_and_unknown_targets():
    log = [node_added(0, "a", None, 0), mut(1, "node.status_changed", "a", {"status": "completed"},
                                            {"status": "pending"}),
           mut(2, "node.status_changed", "ghost", {"status": "failed"}, {"status": "running"})]
    _, problems = replay(log)
    assert [p.code for p in problems] == ["E_REPLAY_INVALID", "E_REPLAY_INVALID"]


def test_full_rows_check_on_a_minimal_valid_card():
    mutations = [node_added(0, "a", None, 0),
                 mut(1, "node.status_changed", "a", {"status": "completed"}, {"status": "running"}, reason="done")]
    rows = {"mutations": mutations,
            "nodes": [Located("nodes.jsonl:1", {"node_id": "a", "run_id": "r", "parent_id": None, "instance_key": "a",
                                                "task_key": "k", "status": "completed", "assigned_worker_key": None,
                                                "level": 0, "created_at": T, "updated_at": T})],
            "edges": [], "annotations": [], "events": []}
    assert check_rows(rows, set()) == []
    rows["nodes"][0].row["created_at"] = "yesterday"
    assert {p.code for p in check_rows(rows, set())} == {"E_ROW_SCHEMA", "E_REPLAY_MISMATCH"}


def test_sequences():
    def ev(i: int, execution: str, seq: int) -> Located:
        return Located(f"events.jsonl:{i}", {"task_execution_id": execution, "sequence": seq})

    assert event_sequence_problems([ev(1, "x", 0), ev(2, "y", 0), ev(3, "x", 1)]) == []
    assert [p.code for p in event_sequence_problems([ev(1, "x", 1), ev(2, "x", 0)])] == ["E_EVENT_SEQUENCE"]
    assert [p.code for p in event_sequence_problems([ev(1, "x", 0), ev(2, "x", 2)])] == ["E_EVENT_SEQUENCE_GAP"]
    log = [mut(0, "x", "r", {}), mut(2, "x", "r", {})]
    assert [p.code for p in mutation_sequence_problems(log)] == ["E_MUTATION_SEQUENCE"]


def test_redaction_helpers():
    row = {"payload": {"request": {"messages": [{"role": "user", "content": "hi"}, {"role": "system"}]}}}
    new, n = redact_path(row, ["payload", "request", "messages", "content"], "pii")
    assert n == 1 and new["payload"]["request"]["messages"][0]["content"] == {"$redacted": "pii"}
    assert row["payload"]["request"]["messages"][0]["content"] == "hi"  # input untouched
    assert same({"a": {"$redacted": "pii"}}, {"a": [1, 2]}) and not same({"a": 1}, {"a": 1.0})
    cleaned, hits = scrub_secrets({"Authorization": "Bearer abcdef123", "prompt_tokens": 5, "max_tokens": 10,
                                   "session_token": "xyz", "note": "key sk-abcdefghijklmnopqrstu"})
    assert cleaned["prompt_tokens"] == 5 and cleaned["max_tokens"] == 10
    assert cleaned["Authorization"] == {"$redacted": "safety"} == cleaned["session_token"]
    assert cleaned["note"] == "key sk-[redacted]" and hits == {"Authorization", "session_token", "note"}
    url, hits = scrub_secrets({"endpoint": "https://bob:pa55@host:8000/v1"})
    assert url == {"endpoint": "https://[redacted]@host:8000/v1"} and hits == {"endpoint"}


def test_lines_split_only_on_newline():
    rows = [{"text": "a\u2028b\x85c\x0cd"}, {"n": 1}]
    data = encode_lines(rows)
    decoded, bad = decode_lines("x.jsonl", data)
    assert bad == [] and [loc.row for loc in decoded] == rows
    assert [loc.where for loc in decoded] == ["x.jsonl:1", "x.jsonl:2"]
    _, bad = decode_lines("x.jsonl", b'{"a": NaN}\n[1]\n{"b": 1}')
    assert [w for w, _ in bad] == ["x.jsonl", "x.jsonl:1", "x.jsonl:2"]


def test_every_problem_code_is_documented():
    """Each check has its own code, listed (with its meaning) in engine.cards.format.problems."""
    import re
    from pathlib import Path

    import engine.cards.format.problems as problems

    root = Path(__file__).resolve().parents[3]
    used = set()
    for path in (root / "engine" / "cards").rglob("*.py"):
        used |= set(re.findall(r'"([EW]_[A-Z_]+)"', path.read_text(encoding="utf-8")))
    documented = set(re.findall(r"^\s+([EW]_[A-Z_]+)\s", problems.__doc__ or "", re.MULTILINE))
    assert used <= documented, sorted(used - documented)
    assert documented <= used, sorted(documented - used)
