"""Recovery by re-running: a job that infrastructure failures left unfinished is finished by running it again.

When is a job unfinished? Its optimization ended `infrastructure_invalid` (the endpoints kept failing) or holds a
rollout that ended as an infrastructure failure (all three attempts failed: the method went on without it, so its
path differs from a healthy run's), or a sealed evaluation holds such rollouts (the selection then falls back, or
the test arm misses a row). A job whose records hold no such rollout is finished and never changed.

What happens on the re-run: the artifacts derived from the failures (optimization.json and optimization/, the
evaluations holding infrastructure failures, and the selection/test/result derived from them) are moved under
`recovered/g<store generation>/` (kept for audit, never deleted) and one `job.recovery` run mutation names them.
The phases then run again: every rollout and reflection call recorded as usable is replayed from the store (no
request, same ledger outcome), every rollout recorded as an infrastructure failure is attempted again with its
same seed (engine.runner), so the method follows its deterministic replay and the final artifacts equal those of
an uninterrupted healthy run. The failed attempts stay in the store and the card.

Re-deriving the selection after the test phase ran is not a leak: selection reads validation records only, and
those are the same records (replayed) or the records a healthy run would have had.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio

from core.errors import ArtifactError
from engine.job.artifacts import read_json
from engine.job.context import JobContext
from engine.store import Store
from engine.log import get_logger

log = get_logger("engine.job")

DERIVED = ("selection.json", "test.json", "result.json")


def _load(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise ArtifactError(f"{path} is not a JSON object")
    return data


def unfinished(out: Path) -> tuple[list[str], list[Path]]:
    """(reasons, artifacts to set aside) for a job left unfinished by infrastructure failures; ([], []) if none."""
    optimization = _load(out / "optimization.json")
    reasons: list[str] = []
    paths: list[Path] = []
    unusable = (optimization or {}).get("failure_counts", {}).get("infrastructure_failures", 0)
    if optimization is not None and optimization.get("failure_kind") == "infrastructure_invalid":
        reasons.append("optimization ended infrastructure_invalid")
    elif unusable > 0:
        reasons.append(f"optimization holds {unusable} rollout(s) that failed every attempt")
    if reasons:
        paths += [out / "optimization.json", out / "optimization"]
    for path in sorted((out / "evaluations").glob("*.json")):
        evaluation = _load(path)
        if evaluation is not None and evaluation.get("failure_counts", {}).get("infrastructure_failures", 0) > 0:
            reasons.append(f"evaluation {path.stem} holds infrastructure failures")
            paths.append(path)
    if reasons:
        paths += [out / name for name in DERIVED]
    return reasons, [p for p in paths if p.exists()]


def set_aside(out: Path, paths: list[Path], generation: int) -> list[str]:
    """Move `paths` under recovered/g<generation>/ keeping their relative layout; returns the moved names."""
    target = out / "recovered" / f"g{generation}"
    moved = []
    for path in paths:
        relative = path.relative_to(out)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), str(destination))
        moved.append(str(relative))
    return moved


async def recover(out: Path, store: Store, cell_id: str, *, quiet: bool = False) -> None:
    """A job left unfinished by infrastructure failures is finished by this run (engine.job.recovery)."""
    reasons, paths = unfinished(out)
    if not reasons:
        return
    moved = set_aside(out, paths, store.generation)
    if not quiet:
        log.info(f"recovery: {'; '.join(reasons)}; attempting the failed rollouts again with their seeds "
                 f"(earlier artifacts kept in recovered/g{store.generation}/)", kind="recovery", reasons=reasons)
    await store.mutate("job.recovery", "run", cell_id, actor="engine:job", new={"reasons": reasons, "moved": moved},
                       reason="re-run after infrastructure failures")


def say_replays(ctx: JobContext, resuming: bool = True) -> str | None:
    """The one line a resumed job prints: what it answered from the store instead of sending again (whole
    rollouts, and model calls of rollouts re-run in part and of the method's reflection, judge and probe calls;
    a sealed artifact reused is neither)."""
    if not resuming:
        return None
    rollouts = ctx.progress.replayed_rollouts if ctx.progress is not None else 0
    calls = ctx.runner.calls.replayed + sum(c.replayed_calls for c in ctx.clients.values())
    line = f"resumed: {rollouts} rollouts and {calls} model calls replayed from the store"
    if not ctx.cfg.quiet:
        log.info(line, kind="resume", replayed_rollouts=rollouts, replayed_model_calls=calls)
    return line


async def record_failure(store: Store, run_node: str, exc: BaseException) -> None:
    """The run node's terminal status, written even when the job is being cancelled (shielded, with a deadline:
    the store's writer is never cancelled, so this completes in milliseconds)."""
    kind = "cancelled_by_parent" if isinstance(exc, anyio.get_cancelled_exc_class()) else "unknown"
    status = "cancelled" if kind == "cancelled_by_parent" else "failed"
    try:
        with anyio.fail_after(30, shield=True):
            await store.set_node_status(run_node, status, actor="engine:job",
                                        reason=f"{type(exc).__name__}: {str(exc)[:500]}",
                                        extra={"failure": {"kind": kind, "exception_type": type(exc).__name__}})
    except TimeoutError:
        log.warning("warning: could not record the job's failure in the store within 30 s")
