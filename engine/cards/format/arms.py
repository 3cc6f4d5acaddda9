"""Identities and evaluation arms re-derived from `run.derivation` (format 1.2) and the rollouts.

E_IDENTITY_MISMATCH: condition_id is not the hash of the recorded condition, job_sha256 not the hash of the job
payload, the condition's split hash not the job's, an evaluation id not the hash of its identity, selection_id not
the hash of the selection payload, or the run block's copies differ.
E_ARM_IDS: an evaluation arm (final validation seed/incumbent, test seed/deployed) does not hold exactly its
split's ids (the selection's ordered validation ids, the test phase's example ids), once each, in position order,
in its own phase, with its bundle; or the arm's evaluation identity names another split, seed or bundle.
E_ARM_SEED: a rollout's request seed is not the paired evaluation seed of (condition_id, evaluation seed, split,
example id), or a model call's seed is not its member/turn seed under the condition's member seed scheme.
"""

from __future__ import annotations

from typing import Any

from core.canonical import content_hash
from core.protocol import evaluation_identity
from core.seeds import TURN_HASH_SCHEME, paired_evaluation_seed, turn_seed
from engine.cards.format.problems import Problem
from engine.cards.format.rollouts import Index, Rollout, arm

MANIFEST = "manifest.json"
WHERE = "manifest.json:run.derivation"
# (phase of the mutation, its key of the evaluation id, the split, the selection bundle key the arm runs)
ARMS = (("validation", "baseline_evaluation_id", "seed_bundle"),
        ("validation", "candidate_evaluation_id", "incumbent_bundle"),
        ("test", "baseline_evaluation_id", "seed_bundle"),
        ("test", "deployed_evaluation_id", "deployed_bundle"))


def identity_problems(run: dict[str, Any], derivation: dict[str, Any], hashable: bool = True) -> list[Problem]:
    """`hashable`: the bundle records the job and selection payloads reference are present and unredacted (else
    job_sha256 and selection_id cannot be recomputed; the rest still is)."""
    out: list[Problem] = []
    job = derivation.get("job") or {}
    condition = job.get("condition") or {}
    condition_id = content_hash(condition)
    facts = {"job.condition_id": (job.get("condition_id"), condition_id),
             "run.condition_id": (run.get("condition_id"), condition_id),
             "run.job_sha256": (run.get("job_sha256"), content_hash(job) if hashable else run.get("job_sha256")),
             "job.split_sha256": (job.get("split_sha256"), condition.get("split_sha256")),
             "run.cell_id": (run.get("cell_id"), job.get("cell_id")),
             "run.seed": (run.get("seed"), job.get("optimizer_seed"))}
    selection = derivation.get("selection")
    if isinstance(selection, dict):
        if hashable:
            facts["selection.selection_id"] = (selection.get("selection_id"), content_hash(
                {k: v for k, v in selection.items() if k != "selection_id"})[:32])
        facts["selection.condition_id"] = (selection.get("condition_id"), condition_id)
        if isinstance(run.get("selection"), dict):
            for key in ("selection_id", "selected_candidate", "fallback_reason"):
                facts[f"run.selection.{key}"] = (run["selection"].get(key), selection.get(key))
    for evaluation_id, ident in sorted((derivation.get("evaluations") or {}).items()):
        try:
            fresh = evaluation_identity(cond=condition, **ident)["evaluation_id"]
        except TypeError:
            fresh = None
        facts[f"evaluations.{evaluation_id}"] = (evaluation_id, fresh)
    for key, (stated, derived) in facts.items():
        if stated != derived:
            out.append(Problem("E_IDENTITY_MISMATCH", WHERE, f"{key} is {stated!r} but re-derives as {derived!r}"))
    return out


def _digest(bundle: Any) -> Any:
    return bundle.get("bundle_sha256", bundle.get("$bundle")) if isinstance(bundle, dict) else None


def arm_problems(idx: Index, derivation: dict[str, Any]) -> list[Problem]:
    out: list[Problem] = []
    job = derivation.get("job") or {}
    condition = job.get("condition") or {}
    condition_id = content_hash(condition)
    selection = derivation.get("selection") or {}
    evaluations = derivation.get("evaluations") or {}
    expected_ids = {"validation": selection.get("ordered_validation_ids")}
    test_phase = idx.phases.get("test")
    if test_phase is not None:
        expected_ids["test"] = (test_phase.row.get("new_value") or {}).get("example_ids")
    scheme = str(condition.get("member_seed_scheme", TURN_HASH_SCHEME))
    for phase, key, bundle_key in ARMS:
        loc = idx.phases.get(phase)
        evaluation_id = (loc.row.get("new_value") or {}).get(key) if loc is not None else None
        if not isinstance(evaluation_id, str):
            continue
        ident = evaluations.get(evaluation_id)
        name = f"{phase} {key.split('_')[0]} arm {evaluation_id[:12]}"
        if not isinstance(ident, dict):
            out.append(Problem("E_ARM_IDS", loc.where if loc else WHERE, f"{name}: no evaluation identity in the "
                                                                          "card's derivation"))
            continue
        ids = expected_ids.get(phase)
        wanted = {"split": phase, "evaluation_seed": job.get("optimizer_seed"), "ordered_example_ids": ids,
                  "bundle_sha256": _digest(selection.get(bundle_key))}
        for field, value in wanted.items():
            if ident.get(field) != value:
                out.append(Problem("E_ARM_IDS", WHERE, f"{name}: its identity's {field} is {ident.get(field)!r}, "
                                                       f"the arm requires {value!r}"))
        out += _rollout_problems(name, phase, arm(idx, evaluation_id), ident, condition_id, scheme)
    return out


def _rollout_problems(name: str, phase: str, rollouts: list[Rollout], ident: dict[str, Any], condition_id: str,
                      scheme: str) -> list[Problem]:
    out: list[Problem] = []
    ordered = sorted(rollouts, key=_position)
    got = [r.payload.get("example_id") for r in ordered]
    ids = list(ident.get("ordered_example_ids") or [])
    positions = [r.payload.get("position") for r in ordered]
    where = ordered[0].claim.where if ordered else WHERE
    if got != ids or positions != list(range(len(ids))):
        missing = [i for i in ids if i not in got]
        extra = [i for i in got if i not in ids or got.count(i) > 1]
        out.append(Problem("E_ARM_IDS", where, f"{name} holds {len(got)} rollout(s) for {len(ids)} id(s) of its "
                                               f"split (missing {missing[:3]}, extra or repeated {extra[:3]}, "
                                               f"positions {'ok' if positions == list(range(len(got))) else 'out of order'})"))
    for r in ordered:
        p = r.payload
        if p.get("phase") != phase or p.get("bundle_sha256") != ident.get("bundle_sha256"):
            out.append(Problem("E_ARM_IDS", r.claim.where, f"{name}: rollout {r.node!r} is phase {p.get('phase')!r}"
                                                           f" with bundle {str(p.get('bundle_sha256'))[:12]}"))
        seed = paired_evaluation_seed(condition_id, int(ident.get("evaluation_seed") or 0), phase,
                                      str(p.get("example_id")))
        if p.get("request_seed") != seed:
            out.append(Problem("E_ARM_SEED", r.claim.where, f"{name}: rollout {r.node!r} has request seed "
                                                            f"{p.get('request_seed')!r}, the paired seed is {seed}"))
            continue
        out += call_seed_problems(r, seed, scheme)
    return out


def _position(r: Rollout) -> int:
    position = r.payload.get("position")
    return position if isinstance(position, int) else 1 << 30


def call_seed_problems(r: Rollout, seed: int, scheme: str) -> list[Problem]:
    for attempts in r.calls.values():
        for events in attempts.values():
            for loc in events:
                p = loc.row.get("payload") or {}
                role, member, turn = p.get("role"), p.get("member"), p.get("turn")
                if not (isinstance(role, str) and isinstance(member, int) and isinstance(turn, int)):
                    continue
                want = turn_seed(scheme, seed, role, member, turn)
                sent = [p.get("seed"), (p.get("params") or {}).get("seed")]
                if any(s is not None and s != want for s in sent):
                    return [Problem("E_ARM_SEED", loc.where, f"call {role}.{member} turn {turn} of {r.node!r} sent "
                                                             f"seed {sent}, its seed is {want}")]
    return []
