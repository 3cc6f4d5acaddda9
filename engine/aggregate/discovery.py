"""Find and read job ``result.json`` files; every file that cannot be used is skipped with a reason, never a crash.

Only structure is checked here (schema, protocol, field types, paired lengths, scores in [0, 1]). Whether the
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

JOB_RESULT_SCHEMA = "mas-promptbench-job-result/v1"
PROTOCOL_ID = "mas-promptbench-v1"
GRID_FIELDS = ("method", "task", "topology", "framework", "communication", "team_size", "task_model")
FAILURE_FIELDS = ("n", "usable", "success", "semantic_failures", "infrastructure_failures", "budget_exhausted",
                  "skipped")
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

    @property
    def cell(self) -> dict[str, Any]:
        return dict(zip(GRID_FIELDS, self.grid))

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


# ---------------------------------------------------------------------------------------------------------------
# Field readers: each raises MalformedResult naming the field


def _section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise MalformedResult(f"missing or non-object field {key!r}")
    return value


def _optional_str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedResult(f"field {where}.{key} is not a string")
    return value


def _optional_number(data: Mapping[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MalformedResult(f"field {where}.{key} is not a finite number")
    return float(value)


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedResult(f"field {where} is not an integer")
    return value


def _grid(data: Mapping[str, Any]) -> GridKey:
    grid = data.get("grid_cell")
    if not isinstance(grid, Mapping):  # older files: the cell plus the method
        cell = _section(data, "cell")
        grid = {**cell, "method": data.get("method")}
    values: list[Any] = []
    for name in GRID_FIELDS:
        value = grid.get(name)
        if name == "team_size":
            values.append(_int(value, f"grid_cell.{name}"))
        elif not isinstance(value, str) or not value:
            raise MalformedResult(f"missing or non-string field grid_cell.{name}")
        else:
            values.append(value)
    return tuple(values)  # type: ignore[return-value]


def _scores(test: Mapping[str, Any], key: str, n: int) -> tuple[float, ...]:
    scores = test.get(key)
    if not isinstance(scores, list):
        raise MalformedResult(f"missing or non-list field test.{key}")
    if len(scores) != n:
        raise MalformedResult(f"test.{key} has {len(scores)} scores for {n} example ids")
    out = []
    for score in scores:
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0.0 <= score <= 1.0:
            raise MalformedResult(f"test.{key} holds a score outside [0, 1]: {score!r}")
        out.append(float(score))
    return tuple(out)


def _failure_counts(test: Mapping[str, Any]) -> Mapping[str, Mapping[str, int]] | None:
    counts = test.get("failure_counts")
    if counts is None:
        return None
    if not isinstance(counts, Mapping):
        raise MalformedResult("field test.failure_counts is not an object")
    parsed: dict[str, dict[str, int]] = {}
    for arm in ("baseline", "deployed"):
        section = counts.get(arm)
        if not isinstance(section, Mapping):
            raise MalformedResult(f"field test.failure_counts.{arm} is missing or not an object")
        parsed[arm] = {name: _int(section[name], f"test.failure_counts.{arm}.{name}")
                       for name in FAILURE_FIELDS if name in section}
    return parsed


def parse_result(data: Any, path: str, learning_curve: str | None = None) -> JobResult:
    """A ``JobResult`` from decoded result.json content, or ``MalformedResult`` with the reason."""
    if not isinstance(data, Mapping):
        raise MalformedResult("not a JSON object")
    if data.get("schema") != JOB_RESULT_SCHEMA:
        raise MalformedResult(f"schema is {data.get('schema')!r}, expected {JOB_RESULT_SCHEMA!r}")
    if data.get("protocol_id") != PROTOCOL_ID:
        raise MalformedResult(f"protocol_id is {data.get('protocol_id')!r}, expected {PROTOCOL_ID!r}")
    conformant = data.get("protocol_conformant")
    if not isinstance(conformant, bool):
        raise MalformedResult("missing or non-boolean field protocol_conformant")
    grid = _grid(data)
    seed = _int(data.get("optimizer_seed"), "optimizer_seed")
    tables = data.get("source_tables") or []
    if not isinstance(tables, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tables):
        raise MalformedResult("field source_tables is not a list of integers")
    optimization = _section(data, "optimization")
    selection = _section(data, "selection")
    test = _section(data, "test")
    budget = optimization.get("budget")
    if budget is not None and not isinstance(budget, Mapping):
        raise MalformedResult("field optimization.budget is not an object")
    charged = budget.get("charged") if budget else None
    if charged is not None:
        charged = _int(charged, "optimization.budget.charged")
    valid = test.get("valid_for_aggregation")
    if not isinstance(valid, bool):
        raise MalformedResult("missing or non-boolean field test.valid_for_aggregation")
    ids: tuple[str, ...] = ()
    baseline: tuple[float, ...] = ()
    deployed: tuple[float, ...] = ()
    if valid:  # an invalid test phase is reported per cell; its score arrays may be absent or partial
        raw_ids = test.get("example_ids")
        if not isinstance(raw_ids, list) or not raw_ids or not all(isinstance(i, str) and i for i in raw_ids):
            raise MalformedResult("field test.example_ids is not a non-empty list of strings")
        if len(set(raw_ids)) != len(raw_ids):
            duplicate = next(i for i in raw_ids if raw_ids.count(i) > 1)
            raise MalformedResult(f"test.example_ids repeats {duplicate!r}")
        ids = tuple(raw_ids)
        baseline = _scores(test, "baseline_scores", len(ids))
        deployed = _scores(test, "deployed_scores", len(ids))
    return JobResult(
        path=path,
        grid=grid,
        registry_key=_optional_str(data, "registry_key", "result"),
        source_tables=tuple(tables),
        seed=seed,
        protocol_conformant=conformant,
        selected_candidate=_optional_str(selection, "selected_candidate", "selection"),
        fallback_reason=_optional_str(selection, "fallback_reason", "selection"),
        baseline_validation_score=_optional_number(selection, "baseline_validation_score", "selection"),
        incumbent_validation_score=_optional_number(selection, "incumbent_validation_score", "selection"),
        charged_rollouts=charged,
        stop_reason=_optional_str(optimization, "stop_reason", "optimization"),
        optimization_status=_optional_str(optimization, "status", "optimization"),
        valid_for_aggregation=valid,
        example_ids=ids,
        baseline_scores=baseline,
        deployed_scores=deployed,
        failure_counts=_failure_counts(test),
        learning_curve=learning_curve,
    )


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
