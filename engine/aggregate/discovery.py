"""Find and read job ``result.json`` files; every file that cannot be used is skipped with a reason, never a crash.

Only structure is checked here: the file must validate as core.artifacts.JobResult (schema, protocol, field
types), then paired lengths and scores in [0, 1]. Whether the
seeds of a grid cell fit together (missing or duplicate seeds, mismatched example IDs, an invalid test phase) is
decided per cell in ``engine.aggregate.summary``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.artifacts import GridCell, ResultHeldOut
from core.artifacts import JobResult as ResultArtifact
from core.protocol import PROTOCOL_ID

GRID_FIELDS = ("method", "task", "topology", "framework", "communication", "team_size", "task_model")
LEARNING_CURVE = Path("optimization") / "learning_curve.jsonl"

GridKey = tuple[str, str, str, str, str, int, str]


class MalformedResult(ValueError):
    """A result.json that cannot be aggregated; the message is the skip reason."""


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class JobResult:
    """The fields of one result.json that aggregation uses."""

    path: str
    grid: GridKey
    registry_key: str | None
    source_tables: tuple[int, ...]
    seed: int
    protocol_conformant: bool
    selected_candidate: str | None
    fallback_reason: str | None
    baseline_validation_score: float | None
    incumbent_validation_score: float | None
    charged_rollouts: int | None
    stop_reason: str | None
    optimization_status: str | None
    valid_for_aggregation: bool
    example_ids: tuple[str, ...]
    baseline_scores: tuple[float, ...]
    deployed_scores: tuple[float, ...]
    failure_counts: Mapping[str, Mapping[str, int]] | None
    learning_curve: str | None
    endpoint_kind: str | None = None  # "simulated" | "openai-compatible"; absent in older result.json files

    @property
    def cell(self) -> dict[str, Any]:
        return dict(zip(GRID_FIELDS, self.grid))

    @property
    def simulated_or_nonconformant(self) -> bool:
        """A number from this job must not be published as a protocol result (plots carry a mark)."""
        return not self.protocol_conformant or self.endpoint_kind == "simulated"

    @property
    def is_fallback(self) -> bool:
        """The seed bundle was deployed (a fallback), whatever the reason."""
        return self.fallback_reason is not None or self.selected_candidate != "incumbent"


def find_results(roots: Iterable[Path]) -> list[Path]:
    """Every ``result.json`` at or under the given roots (a root may be the file itself), sorted, no repeats."""
    found: set[Path] = set()
    for root in map(Path, roots):
        if root.is_file() and root.name == "result.json":
            found.add(root)
        elif root.is_dir():
            found.update(path for path in root.rglob("result.json") if path.is_file())
    return sorted(found)


def display_path(path: Path, roots: Sequence[Path]) -> str:
    """``path`` relative to the root directory that holds it, so reports carry no absolute paths (protocol 6).

    A result.json given directly as a root is named by its job directory's name.
    """
    for root in map(Path, roots):
        if root.is_dir() and path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return (Path(path.parent.name) / path.name).as_posix()


def _reason(exc: ValidationError) -> str:
    """The first schema violation, naming the field (e.g. `field test.valid_for_aggregation: Field required`)."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    got = "" if first["type"] == "missing" else f" (got {first['input']!r:.80})"
    return f"field {where}: {first['msg']}{got}"


def _grid(result: ResultArtifact) -> GridKey:
    grid = result.grid_cell or GridCell(method=result.method, **result.cell.to_json())  # older files: cell + method
    values = grid.to_json()
    for name in GRID_FIELDS:
        if name != "team_size" and not values[name]:
            raise MalformedResult(f"missing or non-string field grid_cell.{name}")
    return tuple(values[name] for name in GRID_FIELDS)  # type: ignore[return-value]


def _scores(scores: list[float] | None, key: str, n: int) -> tuple[float, ...]:
    if scores is None:
        raise MalformedResult(f"missing or non-list field test.{key}")
    if len(scores) != n:
        raise MalformedResult(f"test.{key} has {len(scores)} scores for {n} example ids")
    for score in scores:
        if not 0.0 <= score <= 1.0 or not math.isfinite(score):
            raise MalformedResult(f"test.{key} holds a score outside [0, 1]: {score!r}")
    return tuple(float(score) for score in scores)


def _paired_test(test: ResultHeldOut) -> tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...]]:
    """(example ids, baseline scores, deployed scores) of a valid test phase; () for an invalid one, whose score
    arrays may be absent or partial (reported per cell)."""
    if not test.valid_for_aggregation:
        return (), (), ()
    raw_ids = test.example_ids
    if not raw_ids or not all(raw_ids):
        raise MalformedResult("field test.example_ids is not a non-empty list of strings")
    if len(set(raw_ids)) != len(raw_ids):
        duplicate = next(i for i in raw_ids if raw_ids.count(i) > 1)
        raise MalformedResult(f"test.example_ids repeats {duplicate!r}")
    return (tuple(raw_ids), _scores(test.baseline_scores, "baseline_scores", len(raw_ids)),
            _scores(test.deployed_scores, "deployed_scores", len(raw_ids)))


def parse_result(data: Any, path: str, learning_curve: str | None = None) -> JobResult:
    """A ``JobResult`` from decoded result.json content (validated against core.artifacts.JobResult, then the
    pairing and score ranges), or ``MalformedResult`` with the reason."""
    if not isinstance(data, Mapping):
        raise MalformedResult("not a JSON object")
    try:
        result = ResultArtifact.model_validate(data)
    except ValidationError as exc:
        raise MalformedResult(_reason(exc)) from None
    if result.protocol_id != PROTOCOL_ID:
        raise MalformedResult(f"protocol_id is {result.protocol_id!r}, expected {PROTOCOL_ID!r}")
    ids, baseline, deployed = _paired_test(result.test)
    optimization, selection = result.optimization, result.selection
    counts = result.test.failure_counts
    return JobResult(
        path=path,
        grid=_grid(result),
        registry_key=result.registry_key,
        source_tables=tuple(result.source_tables or ()),
        seed=result.optimizer_seed,
        protocol_conformant=result.protocol_conformant,
        selected_candidate=selection.selected_candidate,
        fallback_reason=selection.fallback_reason,
        baseline_validation_score=_finite(selection.baseline_validation_score, "baseline_validation_score"),
        incumbent_validation_score=_finite(selection.incumbent_validation_score, "incumbent_validation_score"),
        charged_rollouts=optimization.budget.charged if optimization.budget else None,
        stop_reason=optimization.stop_reason,
        optimization_status=optimization.status,
        valid_for_aggregation=result.test.valid_for_aggregation,
        example_ids=ids,
        baseline_scores=baseline,
        deployed_scores=deployed,
        failure_counts=counts.to_json() if counts else None,
        learning_curve=learning_curve,
        endpoint_kind=result.endpoint_kind,
    )


def _finite(value: float | None, name: str) -> float | None:
    if value is not None and not math.isfinite(value):
        raise MalformedResult(f"field selection.{name} is not a finite number")
    return value


def load_results(
    paths: Iterable[Path], *, roots: Sequence[Path] = (), include_nonconformant: bool = False
) -> tuple[list[JobResult], list[Skipped]]:
    """Usable job results and a reason for every file skipped (unreadable, malformed, foreign, non-conformant)."""
    results: list[JobResult] = []
    skipped: list[Skipped] = []
    for path in paths:
        name = display_path(Path(path), roots)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            skipped.append(Skipped(name, f"unreadable JSON ({type(exc).__name__}: {exc})"))
            continue
        curve = Path(path).parent / LEARNING_CURVE
        try:
            result = parse_result(data, name, curve.as_posix() if curve.is_file() else None)
        except MalformedResult as exc:
            skipped.append(Skipped(name, str(exc)))
            continue
        if not result.protocol_conformant and not include_nonconformant:
            skipped.append(Skipped(name, "non-conformant job (protocol_conformant is false; "
                                         "use --include-nonconformant)"))
            continue
        results.append(result)
    return results, skipped
