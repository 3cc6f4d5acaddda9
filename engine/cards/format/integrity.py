"""Semantic integrity checks that hashes cannot give: the inline cap, attempt completeness, orphaned `running`
nodes, and rollout outcomes that contradict their own node and score. Pure functions over blob-resolved rows.

Execution ids of rollout attempts are `<rollout node>#g<store generation>a<attempt>` (engine.runner). A rollout's
current `mpb.rollout` annotation claims `attempts` = k: its latest generation must hold events of attempts 1..k,
or for an attempt that failed before any call the runner's failure mutation naming that attempt (E_ATTEMPT_MISSING), and every errored event of that generation must belong to one of them; an errored event of a
rollout that claims no outcome at all, in a finished run, is unclaimed too (E_ATTEMPT_UNCLAIMED). Earlier
generations are interrupted tries (their nodes were cancelled on resume) and are not counted.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from core.canonical import canonical_json
from engine.cards.format.lines import Located
from engine.cards.format.model import JSON_COLUMNS
from engine.cards.format.problems import Problem

Rows = dict[str, list[Located]]
EXECUTION = re.compile(r"^(?P<rollout>.+)#g(?P<generation>\d+)a(?P<attempt>\d+)$")
RUN_TERMINAL = ("completed", "failed", "cancelled")
USABLE = ("success", "semantic_failure")
CONTAINED_AGENT_FAILURE = "AgentFailure"  # engine.containment: agent, tool or vote code raised


def inline_cap_problems(stream: str, long_rows: list[Located], cap: int) -> list[Problem]:
    """`long_rows`: the rows whose line is longer than the cap (no value of a shorter line can exceed it)."""
    out = []
    for loc in long_rows:
        for column in JSON_COLUMNS[stream]:
            value = loc.row.get(column)
            if value is None:
                continue
            size = len(canonical_json(value).encode("utf-8"))
            if size > cap:
                out.append(Problem("E_INLINE_CAP", loc.where, f"{column} is {size} bytes inline; values over the "
                                                              f"{cap}-byte cap must be blob references"))
    return out


def run_status(rows: Rows) -> str | None:
    """The run's terminal status: the last run.status_changed mutation, else the root node's status."""
    status = None
    for loc in rows.get("mutations", []):
        if loc.row.get("mutation_type") == "run.status_changed":
            status = (loc.row.get("new_value") or {}).get("status")
    if status is None:
        roots = [loc.row.get("status") for loc in rows.get("nodes", []) if loc.row.get("parent_id") is None]
        status = roots[0] if roots else None
    return status if status in RUN_TERMINAL else None


def orphan_running_problems(rows: Rows) -> list[Problem]:
    status = run_status(rows)
    if status is None:
        return []
    return [Problem("E_ORPHAN_RUNNING", loc.where, f"node {loc.row.get('node_id')!r} is still running in a {status}"
                                                   " run (it must end completed, failed or cancelled)")
            for loc in rows.get("nodes", []) if loc.row.get("status") == "running"]


def _latest(annotations: list[Located], namespace: str) -> dict[str, Located]:
    latest: dict[str, Located] = {}
    for loc in annotations:
        r = loc.row
        if r.get("namespace") != namespace or r.get("target_type") != "node":
            continue
        target = str(r.get("target_id"))
        if target not in latest or int(r.get("sequence") or 0) > int(latest[target].row.get("sequence") or 0):
            latest[target] = loc
    return latest


def _failed_attempts(mutations: list[Located]) -> dict[str, set[int]]:
    """Attempts the runner recorded as failed by contained agent code (`failure.attempt` of a node.status_changed
    whose exception type is the engine's AgentFailure). Such an attempt may fail before its first model call (a
    tool, vote or render error) and then has no event; this mutation is its record. A failed model call always
    has its errored event, so any other failure explains no missing attempt."""
    out: dict[str, set[int]] = defaultdict(set)
    for loc in mutations:
        r = loc.row
        failure = (r.get("new_value") or {}).get("failure") if r.get("mutation_type") == "node.status_changed" else None
        if (isinstance(failure, dict) and isinstance(failure.get("attempt"), int)
                and failure.get("exception_type") == CONTAINED_AGENT_FAILURE):
            out[str(r.get("target_id"))].add(failure["attempt"])
    return out


def attempt_problems(rows: Rows) -> list[Problem]:
    claims = _latest(rows.get("annotations", []), "mpb.rollout")
    status = {loc.row.get("node_id"): loc.row.get("status") for loc in rows.get("nodes", [])}
    finished = run_status(rows) is not None
    runs: dict[str, dict[int, dict[int, list[Located]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for loc in rows.get("events", []):
        match = EXECUTION.match(str(loc.row.get("task_execution_id")))
        if match:
            runs[match["rollout"]][int(match["generation"])][int(match["attempt"])].append(loc)
    failed_before_calls = _failed_attempts(rows.get("mutations", []))
    out = []
    for rollout, loc in claims.items():
        payload = loc.row.get("payload") or {}
        claimed = payload.get("attempts")
        if not isinstance(claimed, int) or payload.get("budget_exhausted"):
            continue
        generations = runs.get(rollout, {})
        seen = set(generations[max(generations)]) if generations else set()
        missing = [a for a in range(1, claimed + 1) if a not in seen and a not in failed_before_calls[rollout]]
        if missing:
            out.append(Problem("E_ATTEMPT_MISSING", loc.where, f"rollout {rollout!r} claims {claimed} attempt(s) but"
                                                               f" the events hold none of attempt(s) {missing}"))
    for rollout, generations in runs.items():
        claim = claims.get(rollout)
        latest = max(generations)
        for generation, attempts in sorted(generations.items()):
            for attempt, events in sorted(attempts.items()):
                errored = [e for e in events if (e.row.get("payload") or {}).get("error") is not None]
                if not errored:
                    continue
                if claim is None:
                    unclaimed = finished and status.get(rollout) in ("completed", "failed", None)
                else:
                    claimed = (claim.row.get("payload") or {}).get("attempts")
                    unclaimed = generation == latest and isinstance(claimed, int) and attempt > claimed
                if unclaimed:
                    out.append(Problem("E_ATTEMPT_UNCLAIMED", errored[0].where,
                                       f"errored call of {rollout!r} attempt {attempt} (generation {generation}) "
                                       "belongs to no attempt its rollout claims"))
    return out


def rollout_outcome_problems(rows: Rows) -> list[Problem]:
    """A rollout's recorded outcome agrees with its node status and its score (engine.runner's rules: success iff
    score >= 1, usable rollouts completed and scored, infrastructure failures failed and unscored)."""
    claims = _latest(rows.get("annotations", []), "mpb.rollout")
    scores = _latest(rows.get("annotations", []), "mpb.score")
    nodes = {loc.row.get("node_id"): loc.row for loc in rows.get("nodes", [])}
    failed_before_calls = _failed_attempts(rows.get("mutations", []))
    out = []
    for rollout, loc in claims.items():
        payload: dict[str, Any] = loc.row.get("payload") or {}
        outcome = payload.get("status")
        if payload.get("budget_exhausted") or outcome is None:
            continue
        node_status = (nodes.get(rollout) or {}).get("status")
        score = (scores[rollout].row.get("payload") or {}).get("value") if rollout in scores else None
        wrong = None
        if outcome in USABLE:
            if node_status != "completed":
                wrong = f"is {outcome} but its node is {node_status}"
            elif not isinstance(score, (int, float)) or isinstance(score, bool):
                wrong = f"is {outcome} but has no numeric mpb.score value"
            elif (score >= 1.0) != (outcome == "success"):
                wrong = f"is {outcome} but its score is {score}"
        elif outcome == "infrastructure_failure":
            if node_status != "failed":
                wrong = f"is an infrastructure failure but its node is {node_status}"
            elif rollout in scores:
                wrong = "is an infrastructure failure but carries a score"
        if wrong:
            out.append(Problem("E_ROLLOUT_INCONSISTENT", loc.where, f"rollout {rollout!r} {wrong}"))
    return out


def integrity_problems(rows: Rows) -> list[Problem]:
    return orphan_running_problems(rows) + attempt_problems(rows) + rollout_outcome_problems(rows)
