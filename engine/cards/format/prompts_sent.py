"""The prompts actually sent (E_PROMPT_MISMATCH): every recorded model call of a rollout whose bundle the card
records (bundles.jsonl: seed, incumbent, deployed; other candidates when recorded) carries, in its system
messages, the bundle's text for the call's role; the output contract of the condition's version wraps the answering
roles' prompts only (a sequential stage before the last, a worker that does not answer, get none), so the final
attempt of each usable rollout must hold it in at least one call (a failed attempt may end before its answering
role spoke), and no call may carry a contract of another version. Calls whose
messages or role texts a redaction removed are not compared (their omission is declared in the release scope)."""

from __future__ import annotations

from typing import Any

from engine.cards.format.lines import Located
from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index

USABLE = ("success", "semantic_failure")
CONTRACT_PREFIX = "PROTECTED FINAL OUTPUT CONTRACT (v"
CONTRACT_HEADER = CONTRACT_PREFIX + "{version})"


def _system_text(payload: dict[str, Any]) -> str | None:
    messages = (payload.get("request") or {}).get("messages")
    if not isinstance(messages, list):
        return None
    texts = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "system":
            if not isinstance(m.get("content"), str):
                return None
            texts.append(m["content"])
    return "\n".join(texts)


def prompt_problems(idx: Index, bundle_rows: list[Located], contract_version: Any) -> list[Problem]:
    roles: dict[str, dict[str, Any]] = {}
    for loc in bundle_rows:
        if isinstance(loc.row.get("roles"), dict):
            roles[str(loc.row.get("bundle_sha256"))] = loc.row["roles"]
    header = CONTRACT_HEADER.format(version=contract_version) if contract_version is not None else None
    out: list[Problem] = []
    for r in idx.rollouts.values():
        texts = roles.get(str(r.payload.get("bundle_sha256")))
        if texts is None:
            continue
        claimed = r.payload.get("attempts")
        final = None
        if isinstance(claimed, int) and r.payload.get("status") in USABLE:
            final = r.latest_generation().get(claimed)
        for attempts in r.calls.values():
            for events in attempts.values():
                compared = contracted = 0
                for loc in events:
                    problem, seen = _call_problem(loc, texts, header, r.node)
                    if problem is not None:
                        out.append(problem)
                        break
                    compared += seen is not None
                    contracted += bool(seen)
                else:
                    if header is not None and events is final and compared and not contracted:
                        out.append(Problem("E_PROMPT_MISMATCH", events[0].where, f"no system prompt sent in this "
                                                                                 f"attempt of {r.node!r} holds the "
                                                                                 f"output contract ({header})"))
    return out


def _call_problem(loc: Located, texts: dict[str, Any], header: str | None, node: str
                  ) -> tuple[Problem | None, bool | None]:
    """(problem, whether the call's system prompt holds the contract; None when the call is not compared)."""
    payload = loc.row.get("payload") or {}
    role = payload.get("role")
    text = texts.get(role) if isinstance(role, str) else None
    system = _system_text(payload)
    if not isinstance(text, str) or system is None:
        return None, None
    if text not in system:
        return Problem("E_PROMPT_MISMATCH", loc.where, f"the system prompt sent for role {role!r} of {node!r} is "
                                                        "not the bundle's text for that role"), None
    if header is not None and CONTRACT_PREFIX in system.replace(header, ""):
        return Problem("E_PROMPT_MISMATCH", loc.where, f"the system prompt sent for role {role!r} of {node!r} "
                                                        f"carries an output contract other than {header}"), None
    return None, header is not None and header in system
