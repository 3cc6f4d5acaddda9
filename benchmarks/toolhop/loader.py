"""Load ToolHop rows from data/ToolHop.json (bytedance-research/ToolHop layout) in a local directory.

Each row: id (integer; its string form is the row ID), question, answer, tools (name -> OpenAI-style function
schema {name, description, parameters}) and functions (Python source of the tools). Row.task holds the question
and the tool schemas; Row.gold holds the answer (scorer-private) and the tool sources (tool-private: executed by
the engine through call_tool, never shown to a model).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import data_directory
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "toolhop"
ENV_VAR = data_dir_env("toolhop")  # the dataset table's entry (core/datasets.py)
REQUIRED_FIELDS = ("question", "answer", "tools", "functions")
WHERE_TO_GET = (
    "download data/ToolHop.json from the Hugging Face dataset bytedance-research/ToolHop into a directory and pass "
    f"data_dir or set {ENV_VAR}"
)


def find_file(data_dir: str | None) -> Path:
    directory = data_directory(data_dir, ENV_VAR, "ToolHop data directory", WHERE_TO_GET)
    for candidate in (directory / "data" / "ToolHop.json", directory / "ToolHop.json"):
        if candidate.is_file():
            return candidate
    raise DataError(f"ToolHop.json not found in {directory} (looked for data/ToolHop.json and ToolHop.json): "
                    f"{WHERE_TO_GET}")


def tool_entries(tools: Any, where: str) -> list[dict[str, Any]]:
    """[{schema, name, runtime_name, index}] in dataset order; duplicate names get a __<n> suffix."""
    values = list(tools.values()) if isinstance(tools, dict) else list(tools) if isinstance(tools, list) else None
    if values is None:
        raise DataError(f"{where}: field 'tools' is neither an object nor a list of tool schemas")
    schemas = []
    for index, schema in enumerate(values):
        if isinstance(schema, dict) and isinstance(schema.get("function"), dict):
            schema = schema["function"]
        if not isinstance(schema, dict) or not schema.get("name"):
            raise DataError(f"{where}: tool schema {index} has no 'name'")
        schemas.append((index, schema))
    counts = Counter(str(s["name"]) for _, s in schemas)
    seen: Counter[str] = Counter()
    entries = []
    for index, schema in schemas:
        name = str(schema["name"])
        runtime = name
        if counts[name] > 1:
            suffix = f"__{seen[name]}"
            runtime = name[: 64 - len(suffix)] + suffix
        seen[name] += 1
        entries.append({"schema": schema, "name": name, "runtime_name": runtime, "index": index})
    return entries


def to_row(record: dict[str, Any], position: int, where: str) -> Row:
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
    functions = record["functions"]
    sources = list(functions.values()) if isinstance(functions, dict) else list(functions)
    if not all(isinstance(s, str) for s in sources):
        raise DataError(f"{where}: field 'functions' must hold Python source strings")
    entries = tool_entries(record["tools"], where)
    schemas = [{"type": "function", "function": {**e["schema"], "name": e["runtime_name"]}} for e in entries]
    rid = str(record.get("id", position))
    return Row(
        id=rid, dataset=DATASET,
        task={"question": str(record["question"]), "tools": schemas},
        gold={"answer": str(record["answer"]), "functions": sources,
              "tool_index": {e["runtime_name"]: {"name": e["name"], "index": e["index"]} for e in entries}},
    )


def load_pool(data_dir: str | None = None) -> dict[str, Row]:
    path = find_file(data_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of rows")
    pool: dict[str, Row] = {}
    for position, record in enumerate(data):
        if not isinstance(record, dict):
            raise DataError(f"{path} row {position}: not a JSON object")
        row = to_row(record, position, f"{path} row {position}")
        pool.setdefault(row.id, row)
    return pool


def load_rows(ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
    pool = load_pool(data_dir)
    missing = [i for i in ids if i not in pool]
    if missing:
        raise DataError(f"ToolHop: {len(missing)} requested ID(s) not in ToolHop.json: {', '.join(missing[:10])}")
    return [pool[i] for i in ids]
