"""BFCL rows: read the question and possible-answer files and map protocol IDs onto them.

Protocol-v1 names BFCL v3 IDs (`simple_N`, `multiple_N`, `parallel_N`, `parallel_multiple_N`). The
`bfcl-eval` wheel now ships the same four AST categories as BFCL v4 files, one JSON object per line:

    <data_dir>/BFCL_v4_<file_category>.json                   {"id", "question": [[messages]], "function": [...]}
    <data_dir>/possible_answer/BFCL_v4_<file_category>.json   {"id", "ground_truth": [{name: {arg: [allowed]}}]}

with file categories simple_python (v3 "simple": same 400 questions, same order, ids simple_python_N),
multiple, parallel and parallel_multiple (ids unchanged). The data directory is, in order: the `data_dir`
argument, the BFCL_DATA_DIR environment variable, the `data/` folder of the installed bfcl_eval package.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from benchmarks.bfcl.checker import INSTALL_HINT
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "bfcl"
FILE_PREFIX = "BFCL_v4_"
DATA_DIR_ENV = data_dir_env("bfcl")  # the dataset table's entry (core/datasets.py)

# protocol (v3) category -> (file category in bfcl-eval, test category the AST checker is called with)
CATEGORIES: dict[str, tuple[str, str]] = {
    "simple": ("simple_python", "simple_python"),
    "multiple": ("multiple", "multiple"),
    "parallel": ("parallel", "parallel"),
    "parallel_multiple": ("parallel_multiple", "parallel_multiple"),
}
PARALLEL_CATEGORIES = frozenset({"parallel", "parallel_multiple"})
_ID_RE = re.compile(r"^(simple|multiple|parallel|parallel_multiple)_(\d+)$")


@dataclass(frozen=True)
class BfclId:
    protocol_id: str
    category: str  # protocol category: simple | multiple | parallel | parallel_multiple
    index: int

    @property
    def file_category(self) -> str:
        return CATEGORIES[self.category][0]

    @property
    def source_id(self) -> str:
        """The row's id inside the bfcl-eval files (simple_N -> simple_python_N)."""
        return f"{self.file_category}_{self.index}"


def parse_id(protocol_id: str) -> BfclId:
    match = _ID_RE.match(protocol_id)
    if match is None:
        raise DataError(f"not a BFCL protocol ID: {protocol_id!r} (expected simple_N, multiple_N, parallel_N "
                        "or parallel_multiple_N)")
    return BfclId(protocol_id, match.group(1), int(match.group(2)))


def checker_category(category: str) -> str:
    return CATEGORIES[category][1]


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path:
    if data_dir is not None:
        return Path(data_dir)
    from_env = os.environ.get(DATA_DIR_ENV)
    if from_env:
        return Path(from_env)
    return resolve_data_dir_from_package()


def resolve_data_dir_from_package() -> Path:
    """The data/ folder of the installed bfcl_eval package (found without importing it)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(f"BFCL data not found: install it with `{INSTALL_HINT}` or set {DATA_DIR_ENV}")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def load_rows(ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
    """Rows for `ids` in that order; DataError naming a missing file or the IDs the data lacks."""
    root = resolve_data_dir(data_dir)
    parsed = [parse_id(i) for i in ids]
    questions: dict[str, dict[str, dict[str, Any]]] = {}
    answers: dict[str, dict[str, dict[str, Any]]] = {}
    for file_category in sorted({p.file_category for p in parsed}):
        questions[file_category] = _read_jsonl(root / f"{FILE_PREFIX}{file_category}.json")
        answers[file_category] = _read_jsonl(root / "possible_answer" / f"{FILE_PREFIX}{file_category}.json")

    missing = [p.protocol_id for p in parsed
               if p.source_id not in questions[p.file_category] or p.source_id not in answers[p.file_category]]
    if missing:
        shown = ", ".join(missing[:5]) + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
        raise DataError(f"BFCL data in {root} lacks {len(missing)} requested ID(s): {shown}")

    return [_row(p, questions[p.file_category][p.source_id], answers[p.file_category][p.source_id]) for p in parsed]


def _row(pid: BfclId, entry: dict[str, Any], answer: dict[str, Any]) -> Row:
    messages = [dict(message) for turn in entry["question"] for message in turn]
    task = {"question": messages, "functions": copy.deepcopy(entry["function"]), "category": pid.category}
    gold = {"ground_truth": copy.deepcopy(answer["ground_truth"])}
    return Row(id=pid.protocol_id, dataset=DATASET, task=task, gold=gold)


def _read_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        raise DataError(f"BFCL data file not found: {path} (it ships in bfcl-eval: `{INSTALL_HINT}`; "
                        f"or point {DATA_DIR_ENV} at a copy of its data/ folder)")
    stat = path.stat()
    return _read_jsonl_cached(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=32)
def _read_jsonl_cached(path: str, _mtime_ns: int, _size: int) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise DataError(f"{path}: line {number} is not JSON ({exc})") from exc
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                raise DataError(f"{path}: line {number} has no string 'id'")
            rows[item["id"]] = item
    return rows
