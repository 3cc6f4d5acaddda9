"""Load MATH rows (qwedsacf/competition_math layout: problem, level, type, solution) from a local directory.

Any JSON (list of rows, or one row per file as in the original Hendrycks release), JSONL or parquet file under
the directory is read; only Precalculus / Level 5 rows are kept. ID = "math_" + MD5(problem.strip())[:10];
gold = the last \\boxed{} of the solution. No network.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from benchmarks.base import data_directory
from benchmarks.math.equivalence import last_boxed
from benchmarks.math.records import read_records, record_files
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "math"
ENV_VAR = data_dir_env("math")  # the dataset table's entry (core/datasets.py)
SUBJECT = "Precalculus"
LEVEL = "Level 5"
REQUIRED_FIELDS = ("problem", "level", "type", "solution")
WHERE_TO_GET = (
    "download the Hugging Face dataset qwedsacf/competition_math (train split) as JSON/JSONL/parquet "
    f"into a directory and pass data_dir or set {ENV_VAR}"
)


def row_id(problem: str) -> str:
    return "math_" + hashlib.md5(problem.strip().encode("utf-8")).hexdigest()[:10]


def resolve_data_dir(data_dir: str | None) -> Path:
    return data_directory(data_dir, ENV_VAR, "MATH data directory", WHERE_TO_GET)


def load_pool(data_dir: str | None = None) -> dict[str, Row]:
    """All Precalculus Level 5 rows by ID, in file order."""
    directory = resolve_data_dir(data_dir)
    files = record_files(directory)
    if not files:
        raise DataError(f"no JSON/JSONL/parquet file found under {directory}: {WHERE_TO_GET}")
    pool: dict[str, Row] = {}
    for path in files:
        for index, record in enumerate(read_records(path)):
            missing = [field for field in REQUIRED_FIELDS if field not in record]
            if missing:
                raise DataError(f"{path}: row {index} lacks field(s) {', '.join(missing)} (expected {REQUIRED_FIELDS})")
            if record["type"] != SUBJECT or record["level"] != LEVEL:
                continue
            problem = str(record["problem"] or "").strip()
            solution = str(record["solution"] or "").strip()
            answer = last_boxed(solution)
            if not problem or answer is None:
                continue
            rid = row_id(problem)
            pool.setdefault(rid, Row(
                id=rid, dataset=DATASET,
                task={"problem": problem, "subject": SUBJECT, "level": LEVEL},
                gold={"answer": answer, "solution": solution},
            ))
    return pool


def load_rows(ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
    pool = load_pool(data_dir)
    missing = [i for i in ids if i not in pool]
    if missing:
        raise DataError(f"MATH: {len(missing)} requested ID(s) not in the data: {', '.join(missing[:10])}")
    return [pool[i] for i in ids]
