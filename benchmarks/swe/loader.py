"""Read SWE-bench Verified (`princeton-nlp/SWE-bench_Verified`) rows from parquet or JSONL.

Layout: the Hugging Face repo's data/test-00000-of-00001.parquet, or a JSONL export of the same table: one
object a line with instance_id, repo, base_commit, problem_statement, hints_text, patch, test_patch,
FAIL_TO_PASS and PASS_TO_PASS (JSON strings of test names), version, environment_setup_commit, created_at.
JSONL files are preferred when both exist; parquet needs pyarrow. patch, test_patch and the test lists go to
Row.gold only.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

ENV_VAR = data_dir_env("swe")  # the dataset table's entry (core/datasets.py)
HF_REPO = "princeton-nlp/SWE-bench_Verified"
REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement", "hints_text", "patch", "test_patch",
                   "FAIL_TO_PASS", "PASS_TO_PASS")
ISSUE_CHARS = 16_000
HINT_CHARS = 4_000


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    chosen = data_dir if data_dir is not None else os.environ.get(ENV_VAR)
    if not chosen:
        raise DataError(f"SWE-bench data directory not given: pass data_dir or set {ENV_VAR} to a local copy of the "
                        f"Hugging Face dataset {HF_REPO} (data/test-*.parquet or a JSONL export)")
    path = Path(chosen)
    if not path.is_dir():
        raise DataError(f"SWE-bench data directory {path} does not exist; download the Hugging Face dataset "
                        f"{HF_REPO} there or set {ENV_VAR}")
    return path


def _jsonl_records(files: list[Path]) -> Iterable[tuple[str, dict[str, Any]]]:
    for file in files:
        with file.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        yield f"{file.name}:{lineno}", json.loads(line)
                    except ValueError as exc:
                        raise DataError(f"{file.name}:{lineno}: not valid JSON ({exc})") from exc


def _parquet_records(files: list[Path]) -> Iterable[tuple[str, dict[str, Any]]]:
    if importlib.util.find_spec("pyarrow") is None:
        raise DataError(f"reading {files[0].name} needs pyarrow: install it (pip install pyarrow) or export the "
                        f"{HF_REPO} table to JSONL in the same directory")
    import pyarrow.parquet as pq  # optional dependency

    for file in files:
        table = pq.read_table(file)
        missing = [f for f in REQUIRED_FIELDS if f not in table.column_names]
        if missing:
            raise DataError(f"{file.name}: missing field {missing[0]!r} (not the {HF_REPO} layout)")
        for n, record in enumerate(table.to_pylist(), 1):
            yield f"{file.name}:row {n}", record


def records(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    jsonl = sorted(path.rglob("*.jsonl"))
    if jsonl:
        return _jsonl_records(jsonl)
    parquet = sorted(path.rglob("*.parquet"))
    if parquet:
        return _parquet_records(parquet)
    raise DataError(f"no *.jsonl or *.parquet files under {path}; download the Hugging Face dataset {HF_REPO} "
                    f"(data/test-00000-of-00001.parquet)")


def _test_list(value: Any, where: str, name: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except ValueError as exc:
            raise DataError(f"{where}: {name} is not a JSON list ({exc})") from exc
    if not isinstance(value, list):
        raise DataError(f"{where}: {name} is not a list")
    return [str(v) for v in value]


def to_row(record: dict[str, Any], where: str) -> Row:
    task = {
        "instance_id": record["instance_id"],
        "repo": record["repo"],
        "base_commit": record["base_commit"],
        "problem_statement": (record["problem_statement"] or "")[:ISSUE_CHARS],
        "hints_text": (record["hints_text"] or "")[:HINT_CHARS],
        "version": str(record.get("version") or ""),
    }
    gold = {
        "patch": record["patch"],
        "test_patch": record["test_patch"],
        "FAIL_TO_PASS": _test_list(record["FAIL_TO_PASS"], where, "FAIL_TO_PASS"),
        "PASS_TO_PASS": _test_list(record["PASS_TO_PASS"], where, "PASS_TO_PASS"),
        "environment_setup_commit": record.get("environment_setup_commit"),
    }
    return Row(id=str(record["instance_id"]), dataset="swe", task=task, gold=gold)


def load_rows(ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
    path = resolve_data_dir(data_dir)
    wanted = {str(i) for i in ids}
    found: dict[str, Row] = {}
    for where, record in records(path):
        missing = [f for f in REQUIRED_FIELDS if f not in record]
        if missing:
            raise DataError(f"{where}: missing field {missing[0]!r} (not the {HF_REPO} layout)")
        iid = str(record["instance_id"])
        if iid in wanted:
            found.setdefault(iid, to_row(record, where))
    absent = [i for i in ids if str(i) not in found]
    if absent:
        raise DataError(f"SWE-bench instance IDs not found in {path}: {', '.join(absent[:10])}"
                        + (f" (+{len(absent) - 10} more)" if len(absent) > 10 else ""))
    return [found[str(i)] for i in ids]
