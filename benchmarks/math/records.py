"""Read dataset rows from local JSON, JSONL or parquet files (parquet only when pyarrow is importable)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.errors import DataError

RECORD_SUFFIXES = (".jsonl", ".json", ".parquet")


def read_records(path: Path) -> list[dict[str, Any]]:
    """Rows of one file: a JSON list (or one JSON object = one row), JSONL lines, or a parquet table."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq  # type: ignore[import-not-found]
        except ImportError as exc:
            raise DataError(
                f"{path}: reading parquet needs pyarrow, which is not installed; install pyarrow or convert the "
                "file to JSON/JSONL (e.g. datasets' Dataset.to_json)"
            ) from exc
        return [dict(row) for row in pq.read_table(path).to_pylist()]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc})") from exc
    try:
        if suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            rows = data if isinstance(data, list) else [data]
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from exc
    if not all(isinstance(row, dict) for row in rows):
        raise DataError(f"{path}: expected JSON objects (one per row)")
    return rows


def record_files(directory: Path) -> list[Path]:
    """Data files under `directory` (recursive), sorted by path, JSON/JSONL/parquet only."""
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix.lower() in RECORD_SUFFIXES)
