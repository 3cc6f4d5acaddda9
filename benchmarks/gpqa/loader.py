"""Load GPQA-Diamond rows from the published CSV (Idavidrein/gpqa, gpqa_diamond.csv).

ID = "gpqa_" + MD5(question.strip())[:10]. The correct answer and the three distractors are shuffled into
options A-D with `random.Random(f"{shuffle_seed}|{id}")` (shuffle seed 0 by default), so the ordering of a
row depends only on (seed, id), never on file order. Scorer-private fields go to Row.gold.
"""

from __future__ import annotations

import csv
import hashlib
import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import data_directory
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "gpqa"
ENV_VAR = data_dir_env("gpqa")  # the dataset table's entry (core/datasets.py)
FILENAME = "gpqa_diamond.csv"
LETTERS = ("A", "B", "C", "D")
REQUIRED_COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")
WHERE_TO_GET = (
    f"download {FILENAME} from the gated Hugging Face dataset Idavidrein/gpqa (or dataset.zip of "
    f"github.com/idavidrein/gpqa) into a directory and pass data_dir or set {ENV_VAR}"
)


def row_id(question: str) -> str:
    return "gpqa_" + hashlib.md5(question.strip().encode("utf-8")).hexdigest()[:10]


def shuffle_options(correct: str, incorrect: Sequence[str], seed: str) -> tuple[list[str], str]:
    """The four answers in a `random.Random(seed)` order and the letter of the correct one."""
    answers = [correct, *incorrect]
    order = list(range(4))
    random.Random(seed).shuffle(order)
    return [answers[j] for j in order], LETTERS[order.index(0)]


def find_csv(data_dir: str | None) -> Path:
    directory = data_directory(data_dir, ENV_VAR, "GPQA data directory", WHERE_TO_GET)
    for candidate in (directory / FILENAME, directory / "dataset" / FILENAME, directory / "gpqa_diamond" / FILENAME):
        if candidate.is_file():
            return candidate
    raise DataError(f"{FILENAME} not found in {directory}: {WHERE_TO_GET}")


def load_pool(data_dir: str | None = None, shuffle_seed: int = 0) -> dict[str, Row]:
    path = find_csv(data_dir)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise DataError(f"{path}: missing column(s) {', '.join(missing)} (expected the gpqa_diamond.csv layout)")
        pool: dict[str, Row] = {}
        for raw in reader:
            question = (raw.get("Question") or "").strip()
            correct = (raw.get("Correct Answer") or "").strip()
            incorrect = [(raw.get(f"Incorrect Answer {k}") or "").strip() for k in (1, 2, 3)]
            if not question or not correct or not all(incorrect):
                continue
            rid = row_id(question)
            options, letter = shuffle_options(correct, incorrect, f"{shuffle_seed}|{rid}")
            gold: dict[str, Any] = {"correct_letter": letter, "correct_answer": correct,
                                    "incorrect_answers": incorrect, "raw": dict(raw)}
            pool.setdefault(rid, Row(id=rid, dataset=DATASET, task={"question": question, "options": options},
                                     gold=gold))
    return pool


def load_rows(ids: Sequence[str], data_dir: str | None = None, shuffle_seed: int = 0) -> list[Row]:
    pool = load_pool(data_dir, shuffle_seed)
    missing = [i for i in ids if i not in pool]
    if missing:
        raise DataError(f"GPQA: {len(missing)} requested ID(s) not in {FILENAME}: {', '.join(missing[:10])}")
    return [pool[i] for i in ids]
