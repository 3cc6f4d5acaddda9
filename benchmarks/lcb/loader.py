"""Read LiveCodeBench `livecodebench/code_generation_lite` rows from its published JSONL files.

Layout (Hugging Face dataset repo): test.jsonl, test2.jsonl ... test6.jsonl, one JSON object a line with
question_title, question_content, platform, question_id, contest_id, contest_date, starter_code, difficulty,
public_test_cases (JSON string), private_test_cases (JSON string, or base64(zlib(pickle(json-string))) in the
real data), metadata (JSON string, `func_name` for functional problems).

The private tests are decoded with an Unpickler that resolves no globals at all: the pickle holds a str, so
anything else is refused. Tests, public examples and an optional reference solution go to Row.gold only.
An optional `reference_solutions.json` ({question_id: program}) beside the data is read into gold (used by
fixtures and the simulated endpoint; the real dataset has no solutions).
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import re
import zlib
from pathlib import Path
from typing import Any, Iterable, Sequence

from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

ENV_VAR = data_dir_env("lcb")  # the dataset table's entry (core/datasets.py)
HF_REPO = "livecodebench/code_generation_lite"
REQUIRED_FIELDS = ("question_id", "question_content", "starter_code", "public_test_cases", "private_test_cases",
                   "metadata")
MAX_DECODED_BYTES = 1 << 30
_ID_RE = re.compile(r'"question_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


class _StrOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - refuse every global
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in LCB test data")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not allowed in LCB test data")


def decode_test_cases(raw: Any, where: str = "private_test_cases") -> list[dict[str, Any]]:
    """Plain JSON, or base64(zlib(pickle(json-string))) as in the published files."""
    if isinstance(raw, list):
        tests = raw
    elif isinstance(raw, str):
        try:
            tests = json.loads(raw)
        except ValueError:
            try:
                inflater = zlib.decompressobj()
                data = inflater.decompress(base64.b64decode(raw, validate=False), MAX_DECODED_BYTES)
                if inflater.unconsumed_tail:
                    raise DataError(f"{where}: decoded test data larger than {MAX_DECODED_BYTES} bytes")
                text = _StrOnlyUnpickler(io.BytesIO(data)).load()
            except (ValueError, zlib.error, pickle.UnpicklingError, EOFError) as exc:
                raise DataError(f"{where}: not JSON and not base64(zlib(pickle(str))) ({exc})") from exc
            if not isinstance(text, str):
                raise DataError(f"{where}: pickle holds {type(text).__name__}, expected str")
            try:
                tests = json.loads(text)
            except ValueError as exc:
                raise DataError(f"{where}: decoded text is not JSON ({exc})") from exc
    else:
        raise DataError(f"{where}: unexpected type {type(raw).__name__}")
    if not isinstance(tests, list) or not all(isinstance(t, dict) and "input" in t and "output" in t for t in tests):
        raise DataError(f"{where}: expected a list of {{input, output}} objects")
    return tests


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    chosen = data_dir if data_dir is not None else os.environ.get(ENV_VAR)
    if not chosen:
        raise DataError(f"LCB data directory not given: pass data_dir or set {ENV_VAR} to a local copy of the "
                        f"Hugging Face dataset {HF_REPO} (files test.jsonl ... test6.jsonl)")
    path = Path(chosen)
    if not path.is_dir():
        raise DataError(f"LCB data directory {path} does not exist; download the Hugging Face dataset {HF_REPO} "
                        f"(test*.jsonl) there or set {ENV_VAR}")
    return path


def data_files(path: Path) -> list[Path]:
    files = sorted(path.glob("test*.jsonl"), key=lambda p: (len(p.name), p.name))
    if not files:
        raise DataError(f"no test*.jsonl in {path}; download them from the Hugging Face dataset {HF_REPO}")
    return files


def _iter_wanted(files: Iterable[Path], wanted: set[str]) -> Iterable[tuple[Path, int, dict[str, Any]]]:
    checked = False
    for file in files:
        with file.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                match = _ID_RE.search(line)
                if checked and (match is None or json.loads(f'"{match.group(1)}"') not in wanted):
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise DataError(f"{file.name}:{lineno}: not valid JSON ({exc})") from exc
                missing = [f for f in REQUIRED_FIELDS if f not in record]
                if missing:
                    raise DataError(f"{file.name}:{lineno}: missing field {missing[0]!r} (not the {HF_REPO} layout)")
                checked = True
                if str(record["question_id"]) in wanted:
                    yield file, lineno, record


def _metadata(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise DataError(f"{where}: metadata is not JSON ({exc})") from exc
    return value if isinstance(value, dict) else {}


def to_row(record: dict[str, Any], where: str, reference: str | None = None) -> Row:
    qid = str(record["question_id"])
    private = decode_test_cases(record["private_test_cases"], f"{where} private_test_cases")
    public = decode_test_cases(record["public_test_cases"], f"{where} public_test_cases")
    meta = _metadata(record.get("metadata"), where)
    kinds = {t.get("testtype") for t in (private or public)}
    starter = record.get("starter_code") or ""
    mode = "functional" if "functional" in kinds or (starter.strip() and meta.get("func_name")) else "stdin"
    func_name = meta.get("func_name")
    if mode == "functional" and not func_name:
        raise DataError(f"{where}: functional problem {qid} has no metadata.func_name")
    task = {
        "question_title": record.get("question_title", ""),
        "question_content": record["question_content"],
        "starter_code": starter,
        "platform": record.get("platform", ""),
        "difficulty": record.get("difficulty", ""),
        "contest_date": record.get("contest_date", ""),
        "mode": mode,
    }
    gold: dict[str, Any] = {"mode": mode, "func_name": func_name, "private_tests": private, "public_tests": public}
    if reference is not None:
        gold["reference_solution"] = reference
    return Row(id=qid, dataset="lcb", task=task, gold=gold)


def _references(path: Path) -> dict[str, str]:
    file = path / "reference_solutions.json"
    if not file.is_file():
        return {}
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{file}: not JSON ({exc})") from exc
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def load_rows(ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
    """Rows for `ids` in that order (no network; reads only the local files)."""
    path = resolve_data_dir(data_dir)
    wanted = {str(i) for i in ids}
    references = _references(path)
    found: dict[str, Row] = {}
    for file, lineno, record in _iter_wanted(data_files(path), wanted):
        qid = str(record["question_id"])
        found.setdefault(qid, to_row(record, f"{file.name}:{lineno}", references.get(qid)))
    missing = [i for i in ids if str(i) not in found]
    if missing:
        raise DataError(f"LCB question IDs not found in {path}: {', '.join(missing[:10])}"
                        + (f" (+{len(missing) - 10} more)" if len(missing) > 10 else ""))
    return [found[str(i)] for i in ids]
