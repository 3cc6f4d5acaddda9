"""`card validate` re-derives: forgeries that keep every hash and recomputed number consistent (re-sealed), on
cards of three kinds (single agent, multi-agent with faults, framework runtime), each rejected with its own code;
the clean cards validate with no finding."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.canonical import content_hash
from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import lines, manifest, put_lines, reseal
from tests.engine.cards.kinds import FAULT_ROWS, kind_job
from tests.engine.cards.test_forgery import edit_annotation, forged, rollout_of

KIND_PARAMS = [pytest.param("single"), pytest.param("multi", marks=pytest.mark.slow),
               pytest.param("framework", marks=pytest.mark.slow)]


@pytest.fixture(scope="session")
def kind_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {}


@pytest.fixture(params=KIND_PARAMS)
def card(request: pytest.FixtureRequest, kind_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
         ) -> Bundle:
    kind = request.param
    if kind not in kind_dirs:
        kind_dirs[kind] = kind_job(tmp_path_factory.mktemp("kinds") / kind, kind)
    return export_card(kind_dirs[kind])


def test_clean_card_validates(card):
    assert validate_bundle(card) == []
    derivation = manifest(card)["run"]["derivation"]
    assert derivation["evaluations"] and derivation["splits"]["train"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["independent", "sequential", "centralized"])
def test_every_topology_s_clean_card_validates(tmp_path, kind):
    """Non-answering roles (a sequential stage before the last, a worker) are sent no output contract: their
    cards validate too, and a stripped contract is still caught."""
    card = export_card(kind_job(tmp_path / kind, kind))
    assert validate_bundle(card) == []
    events = lines(card, "events")
    for e in events:
        for m in (e["payload"].get("request") or {}).get("messages") or []:
            if m.get("role") == "system" and isinstance(m.get("content"), str):
                m["content"] = m["content"].replace("PROTECTED FINAL OUTPUT CONTRACT (v2)", "")
    put_lines(card, "events", events)
    forged(card, "E_PROMPT_MISMATCH")


def _test_rollouts(card: Bundle) -> list[dict[str, Any]]:
    return sorted((a for a in lines(card, "annotations") if a["namespace"] == "mpb.rollout"
                   and a["payload"]["phase"] == "test"), key=lambda a: a["payload"]["position"])


def _good(card: Bundle) -> str:
    return next(a["target_id"] for a in _test_rollouts(card) if a["payload"]["status"] == "success")


def _lose_rollout(card: Bundle) -> None:
    gone = _good(card)

    def keep(row: dict[str, Any]) -> bool:
        ids = [row.get(k) for k in ("node_id", "target_id", "task_execution_id")]
        return not any(isinstance(i, str) and (i == gone or i.startswith(gone + "#")) for i in ids)

    for stream in ("events", "nodes", "annotations"):
        put_lines(card, stream, [r for r in lines(card, stream) if keep(r)])
    mutations = [m for m in lines(card, "mutations") if keep(m)]
    for i, m in enumerate(mutations):
        m["sequence"] = i
    put_lines(card, "mutations", mutations)


def _duplicate_id(card: Bundle) -> None:
    first, second = _test_rollouts(card)[:2]
    edit_annotation(card, second["target_id"], "mpb.rollout",
                    lambda p: p.update(example_id=first["payload"]["example_id"]))


def _moved_phase(card: Bundle) -> None:
    edit_annotation(card, _good(card), "mpb.rollout", lambda p: p.update(phase="validation"))


def _reordered(card: Bundle) -> None:
    first, second = _test_rollouts(card)[:2]
    edit_annotation(card, first["target_id"], "mpb.rollout", lambda p: p.update(position=1))
    edit_annotation(card, second["target_id"], "mpb.rollout", lambda p: p.update(position=0))


def _request_seed(card: Bundle) -> None:
    edit_annotation(card, _good(card), "mpb.rollout", lambda p: p.update(request_seed=p["request_seed"] + 1))


def _condition(card: Bundle) -> None:
    man = manifest(card)
    man["run"]["derivation"]["job"]["condition"]["scorer_id"] = "other:scorer"
    reseal(card, man)


def _selection(card: Bundle) -> None:
    """'incumbent strictly better' where the rule falls back (a validation infrastructure failure, or a tie)."""
    man = manifest(card)
    selection = man["run"]["derivation"]["selection"]
    selection.update(selected_candidate="incumbent", fallback_reason=None, deployed_bundle=selection[
        "incumbent_bundle"])
    selection["selection_id"] = content_hash({k: v for k, v in selection.items() if k != "selection_id"})[:32]
    man["run"]["selection"].update(selected_candidate="incumbent", fallback_reason=None,
                                   selection_id=selection["selection_id"])
    mutations = lines(card, "mutations")
    for m in mutations:
        if m["mutation_type"] == "selection.sealed":
            m["new_value"].update(selected_candidate="incumbent", fallback_reason=None,
                                  selection_id=selection["selection_id"])
            m["reason"] = "incumbent strictly better on validation"
    put_lines(card, "mutations", mutations)
    reseal(card, man)


def _prompt(card: Bundle) -> None:
    events = lines(card, "events")
    call = next(e for e in events if e["task_execution_id"].startswith(_good(card)))
    system = call["payload"]["request"]["messages"][0]
    system["content"] = system["content"].replace(" answer", " always answer 42 to", 1)  # inside the role text
    put_lines(card, "events", events)


def _infra_relabelled(card: Bundle) -> None:
    edit_annotation(card, rollout_of(card, FAULT_ROWS["test"]), "mpb.rollout",
                    lambda p: p.update(status="semantic_failure", attempts=3))


def _unclaimed_attempt(card: Bundle) -> None:
    good = _good(card)
    events = lines(card, "events")
    copies = [{**e, "task_execution_id": e["task_execution_id"].replace("#g0a1", "#g0a2"),
               "event_id": e["event_id"].replace("#g0a1", "#g0a2")}
              for e in events if e["task_execution_id"] == good + "#g0a1"]
    put_lines(card, "events", events + copies)


def _reattribute(card: Bundle, consistently: bool) -> None:
    """An optimize call moved to another member: only its worker key, or its key, turn node and payload too."""
    events = lines(card, "events")
    call = next(e for e in events if e["event_type"] == "model_call" and e["task_execution_id"].startswith("optimize/")
                and e["payload"].get("error") is None and isinstance(e["payload"].get("member"), int))
    role, member = call["payload"]["role"], call["payload"]["member"]
    old, new = f"{role}.{member}", f"{role}.{member + 1}"
    call["worker_binding_key"] = new
    if consistently:
        call["node_id"] = call["turn_id"] = call["node_id"].replace(f"/{old}/", f"/{new}/")
        call["payload"]["member"] = member + 1
    put_lines(card, "events", events)


def _train_split(card: Bundle) -> None:
    man = manifest(card)
    train = man["run"]["derivation"]["splits"]["train"]
    train[0], train[1] = train[1], train[0]
    reseal(card, man)


def _stale_key(card: Bundle) -> None:
    """A request's user message rewritten under its old request key."""
    events = lines(card, "events")
    call = next(e for e in events if e["event_type"] == "model_call" and e["payload"].get("request"))
    call["payload"]["request"]["messages"][-1]["content"] += " (edited)"
    put_lines(card, "events", events)


def _budget_zeroed(card: Bundle) -> None:
    mutations = lines(card, "mutations")
    for m in mutations:
        if m["mutation_type"] == "phase.completed" and m["new_value"]["phase"] == "optimize":
            budget = m["new_value"]["budget"]
            budget.update(infrastructure_failures=0, retries=0, attempted=budget["charged"])
    put_lines(card, "mutations", mutations)


def _time_order(card: Bundle) -> None:
    mutations = lines(card, "mutations")
    mutations[len(mutations) // 2]["created_at"] = "2001-01-01T00:00:00.000Z"
    put_lines(card, "mutations", mutations)


def _usage_zeroed(card: Bundle) -> None:
    edit_annotation(card, _good(card), "mpb.rollout", lambda p: p["usage"].update(prompt_tokens=0,
                                                                                  completion_tokens=0))


def _conformance(card: Bundle) -> None:
    man = manifest(card)
    man["run"]["protocol_conformant"] = True
    man["run"]["nonconformance_reasons"] = []
    reseal(card, man)


FORGERIES: dict[str, tuple[Callable[[Bundle], None], str]] = {
    "test arm lost a rollout": (_lose_rollout, "E_ARM_IDS"),
    "test arm gained a duplicate id": (_duplicate_id, "E_ARM_IDS"),
    "test rollout moved to another phase": (_moved_phase, "E_ARM_IDS"),
    "test arm reordered": (_reordered, "E_ARM_IDS"),
    "request seed changed": (_request_seed, "E_ARM_SEED"),
    "train split reordered": (_train_split, "E_IDENTITY_MISMATCH"),
    "request edited under a stale key": (_stale_key, "E_REQUEST_KEY"),
    "condition changed under its id": (_condition, "E_IDENTITY_MISMATCH"),
    "fallback hidden": (_selection, "E_SELECTION_MISMATCH"),
    "system prompt sent differs from the bundle": (_prompt, "E_PROMPT_MISMATCH"),
    "infrastructure failure relabelled semantic": (_infra_relabelled, "E_FAILURE_KIND"),
    "answer from an unclaimed attempt": (_unclaimed_attempt, "E_ATTEMPT_COUNT"),
    "optimize budget failures zeroed": (_budget_zeroed, "E_BUDGET_MISMATCH"),
    "call re-attributed by its worker key": (lambda card: _reattribute(card, False), "E_ATTRIBUTION"),
    "call re-attributed consistently": (lambda card: _reattribute(card, True), "E_ARM_SEED"),
    "timestamps out of order": (_time_order, "E_TIME_ORDER"),
    "token usage zeroed": (_usage_zeroed, "E_USAGE_MISMATCH"),
    "conformance claimed on a simulated run": (_conformance, "E_CONFORMANCE_CLAIM"),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_forgery_rejected_with_its_code(card, name):
    edit, code = FORGERIES[name]
    edit(card)
    forged(card, code)


def test_tie_called_strictly_better(faulty_job):
    card = export_card(faulty_job[0])
    assert manifest(card)["run"]["selection"]["fallback_reason"] == "validation_tie"
    _selection(card)
    forged(card, "E_SELECTION_MISMATCH")

