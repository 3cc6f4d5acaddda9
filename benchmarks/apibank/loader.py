"""Load API-Bank next-call tasks from a DAMO-ConvAI api-bank checkout (APIBANK_ROOT or data_dir).

Layout read (AlibabaResearch/DAMO-ConvAI, folder api-bank):
    lv1-lv2-samples/level-1-given-desc/*.jsonl    one dialogue per file, one turn per line
    lv1-lv2-samples/level-2-toolsearcher/*.jsonl  (turn: role User/AI/API; API turns: api_name, param_dict, result)
    test-data/level-3.json (or test_data/)        list of {requirement, response, apis: [{api_name, input, output}]}
    apis/, lv3_apis/                              API classes (descriptions are read with ast, not imported)
IDs: "level-1::<file>::<2*k>" / "level-2::<file>::<2*k>" = the dialogue before the k-th API call of the file;
"level-3::level-3.json::<sample>::<k>" = the requirement plus the first k calls of sample <sample>.
"""

from __future__ import annotations

import ast
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import given_path
from benchmarks.apibank.calls import format_call, normalize_params
from core.datasets import data_dir_env
from core.errors import DataError
from core.models import Row

DATASET = "apibank"
ENV_VAR = data_dir_env("apibank")  # the dataset table's entry (core/datasets.py)
LEVEL_DIRS = {"1": "lv1-lv2-samples/level-1-given-desc", "2": "lv1-lv2-samples/level-2-toolsearcher"}
LEVEL3_FILES = ("test-data/level-3.json", "test_data/level-3.json")
WHERE_TO_GET = (
    "clone https://github.com/AlibabaResearch/DAMO-ConvAI and set APIBANK_ROOT (or pass data_dir) to its "
    "api-bank folder"
)
TOOLSEARCHER_DESCRIPTION: dict[str, Any] = {
    "name": "ToolSearcher",
    "description": "Searches for relevant tools in library based on the keywords.",
    "input_parameters": {"keywords": {"type": "str", "description": "The keyword to search for."}},
    "output_parameters": {"best_matchs": {"type": "Union[List[dict], dict]",
                                          "description": "The best match tool(s)."}},
}


def resolve_root(data_dir: str | None = None) -> Path:
    root = given_path(data_dir, ENV_VAR, "API-Bank checkout", WHERE_TO_GET)
    if (root / "api-bank").is_dir() and not (root / "lv1-lv2-samples").exists():
        root = root / "api-bank"
    if not root.is_dir():
        raise DataError(f"API-Bank directory {root} does not exist: {WHERE_TO_GET}")
    return root


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataError(f"API-Bank dialogue file not found: {path} ({WHERE_TO_GET})")
    try:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSONL ({exc})") from exc
    for index, turn in enumerate(rows):
        if not isinstance(turn, dict) or "role" not in turn:
            raise DataError(f"{path} line {index}: missing field 'role'")
        if turn["role"] == "API":
            missing = [f for f in ("api_name", "param_dict", "result") if f not in turn]
            if missing:
                raise DataError(f"{path} line {index}: API turn lacks field(s) {', '.join(missing)}")
    return rows


def _level3_path(root: Path) -> Path:
    for rel in LEVEL3_FILES:
        if (root / rel).is_file():
            return root / rel
    raise DataError(f"API-Bank level-3.json not found under {root} (looked for {', '.join(LEVEL3_FILES)}): "
                    f"{WHERE_TO_GET}")


@lru_cache(maxsize=8)
def _level3_data(path: Path, mtime: float) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of samples")
    return data


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def api_source_file(root: Path, subdir: str, api_name: str) -> Path | None:
    directory = root / subdir
    stem = "tool_search" if api_name == "ToolSearcher" else _snake(api_name)
    if (directory / f"{stem}.py").is_file():
        return directory / f"{stem}.py"
    if directory.is_dir():
        pattern = re.compile(rf"^class\s+{re.escape(api_name)}\b", re.MULTILINE)
        for path in sorted(directory.glob("*.py")):
            if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                return path
    return None


def api_description(root: Path, subdir: str, api_name: str) -> dict[str, Any]:
    """name, description, input/output parameters of an API class, read with ast (the module is not run)."""
    if api_name == "ToolSearcher":
        return dict(TOOLSEARCHER_DESCRIPTION)
    info: dict[str, Any] = {"name": api_name}
    path = api_source_file(root, subdir, api_name)
    if path is None:
        return info
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == api_name:
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    key = stmt.targets[0].id
                    if key in ("description", "input_parameters", "output_parameters"):
                        try:
                            info[key] = ast.literal_eval(stmt.value)
                        except ValueError:
                            pass
    return info


def _api_turn(api_name: str, params: dict[str, Any], result: Any) -> dict[str, Any]:
    return {"role": "API", "api_name": api_name, "param_dict": normalize_params(params), "result": result}


def _row(task_id: str, level: str, dialogue: list[dict[str, Any]], descriptions: list[dict[str, Any]],
         ground: dict[str, Any]) -> Row:
    params = normalize_params(ground.get("param_dict") or {})
    prior = [{"api_name": t["api_name"], "param_dict": normalize_params(t.get("param_dict") or {})}
             for t in dialogue if t.get("role") == "API"]
    return Row(
        id=task_id, dataset=DATASET,
        task={"level": level, "dialogue": dialogue, "api_descriptions": descriptions},
        gold={"level": level, "api_name": ground["api_name"], "param_dict": params, "result": ground.get("result"),
              "gold_call": format_call(ground["api_name"], params), "prior_calls": prior},
    )


def _task_level12(root: Path, task_id: str, level: str, rest: str) -> Row:
    filename, _, sample = rest.rpartition("::")
    if not filename or not sample.isdigit() or int(sample) % 2:
        raise DataError(f"API-Bank: malformed ID {task_id!r} (expected level-{level}::<file>.jsonl::<even index>)")
    turns = _read_jsonl(root / LEVEL_DIRS[level] / filename)
    positions = [i for i, t in enumerate(turns) if t.get("role") == "API"]
    k = int(sample) // 2
    if k >= len(positions):
        raise DataError(f"API-Bank: ID {task_id!r} not in the data ({filename} has {len(positions)} API calls)")
    pos = positions[k]
    dialogue = [dict(t) for t in turns[:pos]]
    for turn in dialogue:
        if turn.get("role") == "API":
            turn["param_dict"] = normalize_params(turn.get("param_dict") or {})
    if level == "1":
        names = sorted({t["api_name"] for t in turns if t.get("role") == "API"})
        descriptions = [api_description(root, "apis", name) for name in names]
    else:
        descriptions = [dict(TOOLSEARCHER_DESCRIPTION)]
    return _row(task_id, level, dialogue, descriptions, turns[pos])


def _task_level3(root: Path, task_id: str, rest: str) -> Row:
    parts = rest.split("::")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        raise DataError(f"API-Bank: malformed ID {task_id!r} (expected level-3::level-3.json::<sample>::<call>)")
    path = _level3_path(root)
    data = _level3_data(path, path.stat().st_mtime)
    sample_id, api_id = int(parts[1]), int(parts[2])
    if sample_id >= len(data) or api_id >= len(data[sample_id].get("apis") or []):
        raise DataError(f"API-Bank: ID {task_id!r} not in {path}")
    sample = data[sample_id]
    for field in ("requirement", "apis"):
        if field not in sample:
            raise DataError(f"{path} sample {sample_id}: missing field {field!r}")
    steps = sample["apis"]
    for step in steps:
        if "api_name" not in step or "input" not in step:
            raise DataError(f"{path} sample {sample_id}: API step lacks 'api_name' or 'input'")
    dialogue: list[dict[str, Any]] = [{"role": "User", "text": str(sample["requirement"]).strip()}]
    dialogue += [_api_turn(s["api_name"], s.get("input") or {}, s.get("output")) for s in steps[:api_id]]
    ground = _api_turn(steps[api_id]["api_name"], steps[api_id].get("input") or {}, steps[api_id].get("output"))
    return _row(task_id, "3", dialogue, [dict(TOOLSEARCHER_DESCRIPTION)], ground)


def load_task(root: Path, task_id: str) -> Row:
    level_part, sep, rest = task_id.partition("::")
    if not sep or level_part not in ("level-1", "level-2", "level-3"):
        raise DataError(f"API-Bank: malformed ID {task_id!r} (expected a level-1::, level-2:: or level-3:: prefix)")
    level = level_part[-1]
    if level == "3":
        return _task_level3(root, task_id, rest)
    return _task_level12(root, task_id, level, rest)


def load_rows(ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
    root = resolve_root(data_dir)
    return [load_task(root, task_id) for task_id in ids]
