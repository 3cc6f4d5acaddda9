"""Read APPS (`codeparrot/apps`) rows from its published test.jsonl.

Layout: one JSON object a line with problem_id (int), question, solutions (JSON string: list of programs),
input_output (JSON string: {"inputs": [...], "outputs": [...], "fn_name"?: str}), difficulty ("introductory",
"interview", "competition"), url, starter_code. The loader keeps interview problems only (protocol-v1 5.7).
ID = str(problem_id). Tests and solutions go to Row.gold only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

ENV_VAR = data_dir_env("apps")  # the dataset table's entry (core/datasets.py)
HF_REPO = "codeparrot/apps"
DATA_FILE = "test.jsonl"
REQUIRED_FIELDS = ("problem_id", "question", "solutions", "input_output", "difficulty", "starter_code")
KEPT_DIFFICULTY = "interview"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    chosen = data_dir if data_dir is not None else os.environ.get(ENV_VAR)
    if not chosen:
        raise DataError(f"APPS data directory not given: pass data_dir or set {ENV_VAR} to a local copy of the "
                        f"Hugging Face dataset {HF_REPO} (file {DATA_FILE})")
    path = Path(chosen)
    if not (path / DATA_FILE).is_file():
        raise DataError(f"APPS file {path / DATA_FILE} not found; download {DATA_FILE} from the Hugging Face dataset "
                        f"{HF_REPO} or set {ENV_VAR}")
    return path


def _json_field(record: dict[str, Any], name: str, where: str) -> Any:
    raw = record[name]
    if not isinstance(raw, str):
        return raw
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise DataError(f"{where}: field {name!r} is not JSON ({exc})") from exc


def _as_text(value: Any) -> str:
    return "\n".join(str(v) for v in value) if isinstance(value, list) else str(value)


def to_row(record: dict[str, Any], where: str) -> Row:
    pid = str(record["problem_id"])
    io = _json_field(record, "input_output", where)
    if not isinstance(io, dict) or "inputs" not in io or "outputs" not in io:
        raise DataError(f"{where}: input_output of problem {pid} lacks inputs/outputs")
    if len(io["inputs"]) != len(io["outputs"]):
        raise DataError(f"{where}: problem {pid} has {len(io['inputs'])} inputs but {len(io['outputs'])} outputs")
    fn_name = io.get("fn_name")
    solutions = _json_field(record, "solutions", where) or []
    if fn_name:
        tests = [{"input": list(i) if isinstance(i, list) else [i], "output": o}
                 for i, o in zip(io["inputs"], io["outputs"])]
    else:
        tests = [{"input": _as_text(i), "output": _as_text(o)} for i, o in zip(io["inputs"], io["outputs"])]
    mode = "call" if fn_name else "stdin"
    task = {"question": record["question"], "starter_code": record.get("starter_code") or "", "mode": mode,
            "fn_name": fn_name, "difficulty": record["difficulty"], "url": record.get("url", "")}
    gold = {"mode": mode, "fn_name": fn_name, "tests": tests, "solutions": list(solutions)}
    return Row(id=pid, dataset="apps", task=task, gold=gold)


def load_rows(ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
    """Interview rows for `ids` in that order; a non-interview or absent ID is a DataError."""
    path = resolve_data_dir(data_dir) / DATA_FILE
    wanted = {str(i) for i in ids}
    found: dict[str, Row] = {}
    other: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise DataError(f"{DATA_FILE}:{lineno}: not valid JSON ({exc})") from exc
            missing = [f for f in REQUIRED_FIELDS if f not in record]
            if missing:
                raise DataError(f"{DATA_FILE}:{lineno}: missing field {missing[0]!r} (not the {HF_REPO} layout)")
            pid = str(record["problem_id"])
            if pid not in wanted:
                continue
            if record["difficulty"] != KEPT_DIFFICULTY:
                other[pid] = str(record["difficulty"])
                continue
            found.setdefault(pid, to_row(record, f"{DATA_FILE}:{lineno}"))
    missing_ids = [i for i in ids if str(i) not in found]
    if missing_ids:
        detail = "; ".join(f"{i} is {other[i]}, not interview" for i in missing_ids if i in other)
        raise DataError(f"APPS problem IDs not found among interview problems in {path}: "
                        f"{', '.join(missing_ids[:10])}" + (f" ({detail})" if detail else ""))
    return [found[str(i)] for i in ids]
