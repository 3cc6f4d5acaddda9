"""Load HotpotQA distractor validation rows from a local directory.

Accepted layouts (no network): the Hugging Face `hotpot_qa` / `hotpotqa/hotpot_qa` distractor validation split as
parquet (needs pyarrow), JSON or JSONL with fields id, question, answer, type, level,
supporting_facts{title, sent_id}, context{title, sentences}; or the original release file
hotpot_dev_distractor_v1.json (_id, supporting_facts [[title, sent_id]], context [[title, [sentences]]]).
Question, type and level go to Row.task; answer, supporting facts and context paragraphs go to Row.gold (the
context feeds only the offline wikipedia tools, never a prompt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import data_directory
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "hotpotqa"
ENV_VAR = data_dir_env("hotpotqa")  # the dataset table's entry (core/datasets.py)
SUFFIXES = (".jsonl", ".json", ".parquet")
PREFERRED_NAME_PARTS = ("distractor", "validation", "dev")
REQUIRED_FIELDS = ("question", "answer", "type", "level", "supporting_facts", "context")
WHERE_TO_GET = (
    "download the Hugging Face dataset hotpotqa/hotpot_qa (config distractor, split validation) as parquet/JSON/"
    "JSONL, or hotpot_dev_distractor_v1.json from hotpotqa.github.io, into a directory and pass data_dir or set "
    f"{ENV_VAR}"
)


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq  # type: ignore[import-not-found]
        except ImportError as exc:
            raise DataError(f"{path}: reading parquet needs pyarrow (not installed); install it or convert the file "
                            "to JSON/JSONL") from exc
        return [dict(r) for r in pq.read_table(path).to_pylist()]
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            rows = data if isinstance(data, list) else [data]
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON/JSONL ({exc})") from exc
    if not all(isinstance(r, dict) for r in rows):
        raise DataError(f"{path}: expected one JSON object per row")
    return rows


def data_files(data_dir: str | None) -> list[Path]:
    directory = data_directory(data_dir, ENV_VAR, "HotpotQA data directory", WHERE_TO_GET)
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    preferred = [p for p in files if any(part in p.name.lower() for part in PREFERRED_NAME_PARTS)]
    if not (preferred or files):
        raise DataError(f"no hotpot_dev_distractor_v1.json / validation JSON, JSONL or parquet file in {directory}: "
                        f"{WHERE_TO_GET}")
    return preferred or files


def _context_pairs(context: Any, where: str) -> list[tuple[str, list[str]]]:
    if isinstance(context, dict) and "title" in context and "sentences" in context:
        return [(str(t), [str(s) for s in sents]) for t, sents in zip(context["title"], context["sentences"])]
    if isinstance(context, list) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in context):
        return [(str(t), [str(s) for s in sents]) for t, sents in context]
    raise DataError(f"{where}: field 'context' is neither {{title, sentences}} nor [[title, sentences], ...]")


def _supporting_facts(facts: Any, where: str) -> list[list[Any]]:
    if isinstance(facts, dict) and "title" in facts and "sent_id" in facts:
        return [[str(t), int(i)] for t, i in zip(facts["title"], facts["sent_id"])]
    if isinstance(facts, list):
        return [[str(f[0]), int(f[1])] for f in facts]
    raise DataError(f"{where}: field 'supporting_facts' is neither {{title, sent_id}} nor [[title, sent_id], ...]")


def to_row(record: dict[str, Any], where: str) -> Row:
    rid = record.get("id", record.get("_id"))
    if rid is None:
        raise DataError(f"{where}: missing field 'id' (or '_id')")
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
    pairs = _context_pairs(record["context"], where)
    return Row(
        id=str(rid), dataset=DATASET,
        task={"question": str(record["question"]), "type": str(record["type"]), "level": str(record["level"])},
        gold={"answer": str(record["answer"]),
              "supporting_facts": _supporting_facts(record["supporting_facts"], where),
              "context": [[title, sentences] for title, sentences in pairs]},
    )


def load_pool(data_dir: str | None = None) -> dict[str, Row]:
    pool: dict[str, Row] = {}
    for path in data_files(data_dir):
        for index, record in enumerate(_read(path)):
            row = to_row(record, f"{path} row {index}")
            pool.setdefault(row.id, row)
    return pool


def load_rows(ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
    pool = load_pool(data_dir)
    missing = [i for i in ids if i not in pool]
    if missing:
        raise DataError(f"HotpotQA: {len(missing)} requested ID(s) not in the data: {', '.join(missing[:10])}")
    return [pool[i] for i in ids]
