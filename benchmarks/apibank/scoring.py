"""The API-Bank protocol metric (protocol-v1 §5.7 apibank: "runners' API-Bank replay check"; §10 API-Bank).

Flow, on the raw final message:
  1. the answer is the last parsable bracketed keyword-argument call (positional arguments / bad syntax -> 0);
  2. the API name must equal the gold's;
  3. ToolSearcher gold: the OFFICIAL frozen ToolSearcher (protocol default for the combined manifest "all" and
     levels 2/3): the recorded output for the normalised keywords (lowercased, whitespace collapsed; level 3:
     the ToolSearcher calls of level-3.json, levels 1/2: those of the level-2 dialogues), else the catalog API
     closest to the keywords by sentence embedding (paraphrase-MiniLM-L3-v2; level 2 puts GetUserToken first
     when that API takes a token). Correct when output and exception equal the gold result's;
  4. any other API: the replay check -- instantiate the API classes of the checkout (level 3: lv3_apis),
     replay the dialogue's earlier calls, execute the prediction, and compare with the API's own
     check_api_call_correctness (benchmarks.apibank.replay).

Nothing switches silently. Without the checkout (apis/, init_database/) step 4 REFUSES (ScorerUnavailable)
unless APIBANK_ALLOW_ARGUMENT_MATCH=1, which scores by argument equality and marks every such score
protocol_conformant=False. A ToolSearcher miss without the embedding model REFUSES unless
APIBANK_TOOLSEARCHER_SCORER=keyword, which scores by keyword equality, marked protocol_conformant=False.
"""

from __future__ import annotations

import ast
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.apibank import loader
from benchmarks.apibank.calls import CallParseError, extract_call, normalize_params, parse_call
from benchmarks.apibank.replay import checkout_available, replay_check
from core.errors import DataError
from core.models import Row, Score

Embedder = Callable[[str], Sequence[float]]
ALLOW_ARGUMENT_MATCH_ENV = "APIBANK_ALLOW_ARGUMENT_MATCH"
TOOLSEARCHER_SCORER_ENV = "APIBANK_TOOLSEARCHER_SCORER"
MODEL_ENV = "APIBANK_TOOLSEARCHER_MODEL"
DEFAULT_MODEL = "sentence-transformers/paraphrase-MiniLM-L3-v2"


class ScorerUnavailable(DataError):
    """The protocol's scorer cannot run here (missing checkout or embedding model): refused, never replaced."""

    kind = "scorer_unavailable"


def keywords_key(value: Any) -> str:
    return " ".join(str(value or "").strip().lower().split())


def score_call(row: Row, text: str | None, root: Path | None, embedder: Embedder | None = None) -> Score:
    gold = row.gold
    call = extract_call(text)
    meta: dict[str, Any] = {"gold_call": gold["gold_call"], "predicted_call": call, "check": None}
    if call is None:
        return Score(value=0.0, malformed=True, metadata=meta,
                     feedback=f"No bracketed API call found; expected one call like {gold['gold_call']}.")
    try:
        name, params = parse_call(call)
    except CallParseError as exc:
        detail = ("uses positional arguments; use keyword arguments only" if exc.reason == "positional"
                  else f"could not be parsed ({exc})")
        return Score(value=0.0, metadata={**meta, "parse_error": exc.reason},
                     feedback=f"Unparsable call: {call[:200]} {detail}.")
    params = normalize_params(params)
    if name != gold["api_name"]:
        return Score(value=0.0, metadata=meta,
                     feedback=f"Wrong API: called {name}, expected {gold['api_name']} ({gold['gold_call']}).")
    if name == "ToolSearcher":
        correct, why, extra = _toolsearcher(row, params, root, embedder)
    else:
        correct, why, extra = _replay_or_refuse(row, name, params, root)
    meta.update(extra)
    if correct:
        return Score(value=1.0, metadata=meta, feedback=f"Correct: {call} passes the {meta['check']} check.")
    return Score(value=0.0, metadata={**meta, "error": why},
                 feedback=f"Argument mismatch: {call[:300]} does not reproduce the expected call "
                          f"{gold['gold_call']} ({meta['check']} check: {why}).")


def checkout_problem(root: Path | None) -> str | None:
    """None when the replay check can run (or argument matching was explicitly allowed), else why not."""
    if (root is not None and checkout_available(root)) or os.environ.get(ALLOW_ARGUMENT_MATCH_ENV) == "1":
        return None
    return (f"API-Bank replay check needs the API-Bank checkout (apis/ and init_database/) at {root or '?'} or "
            f"{loader.ENV_VAR}; refusing to score otherwise ({ALLOW_ARGUMENT_MATCH_ENV}=1 scores by argument "
            "matching, marked non-conformant)")


def _replay_or_refuse(row: Row, name: str, params: dict[str, Any], root: Path | None) -> tuple[bool, str, dict[str, Any]]:
    gold = row.gold
    if root is not None and checkout_available(root):
        correct, error = replay_check(root, gold, name, params)
        return correct, error or "API result differs from the expected call's result", {"check": "replay"}
    problem = checkout_problem(root)
    if problem is not None:
        raise ScorerUnavailable(f"{row.id}: {problem}")
    expected = gold["param_dict"]
    marks = {"check": "argument_match", "protocol_conformant": False}
    if set(params) != set(expected):
        return False, f"keys {sorted(params)} != {sorted(expected)}", marks
    wrong = [k for k in expected if not (params[k] == expected[k] or str(params[k]).strip() == str(expected[k]).strip())]
    return not wrong, f"different value(s) for {', '.join(wrong)}", marks


def _toolsearcher(row: Row, params: dict[str, Any], root: Path | None,
                  embedder: Embedder | None) -> tuple[bool, str, dict[str, Any]]:
    gold_result = row.gold.get("result") or {}
    choice = (os.environ.get(TOOLSEARCHER_SCORER_ENV) or "official").strip().lower()
    if choice == "keyword":
        got, want = keywords_key(params.get("keywords")), keywords_key(row.gold["param_dict"].get("keywords"))
        return got == want, f"keywords {got!r} != {want!r}", {"check": "toolsearcher_keyword",
                                                              "protocol_conformant": False}
    if choice != "official":
        raise ScorerUnavailable(f"{TOOLSEARCHER_SCORER_ENV}={choice!r} is not available here (official or keyword)")
    if root is None:
        raise ScorerUnavailable(f"the official ToolSearcher scorer needs the API-Bank data ({loader.ENV_VAR})")
    level = str(row.gold.get("level", "2"))
    key = keywords_key(params.get("keywords"))
    recorded = recorded_outputs(str(root), level)
    if key in recorded:
        output, source = recorded[key], "recorded"
    else:
        output, source = _closest_api(root, level, str(params.get("keywords", "")), embedder), "embedding"
    correct = output == gold_result.get("output") and gold_result.get("exception") is None
    why = f"the ToolSearcher output for {key!r} ({source}) is not the expected one"
    return correct, why, {"check": "toolsearcher_official", "toolsearcher_source": source}


@lru_cache(maxsize=16)
def recorded_outputs(root: str, level: str) -> dict[str, Any]:
    """Normalised keywords -> the recorded ToolSearcher output (first record wins)."""
    outputs: dict[str, Any] = {}
    for keywords, output in _toolsearcher_records(Path(root), level):
        outputs.setdefault(keywords_key(keywords), output)
    return outputs


def _toolsearcher_records(root: Path, level: str) -> list[tuple[Any, Any]]:
    if level == "3":
        path = next((root / rel for rel in loader.LEVEL3_FILES if (root / rel).is_file()), None)
        if path is None:
            raise ScorerUnavailable(f"level-3.json not found under {root}")
        samples = json.loads(path.read_text(encoding="utf-8"))
        return [((step.get("input") or {}).get("keywords"), (step.get("output") or {}).get("output"))
                for sample in samples for step in sample.get("apis") or [] if step.get("api_name") == "ToolSearcher"]
    records = []
    for path in sorted((root / loader.LEVEL_DIRS["2"]).glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            turn = json.loads(line) if line.strip() else {}
            if turn.get("role") == "API" and turn.get("api_name") == "ToolSearcher":
                records.append(((turn.get("param_dict") or {}).get("keywords"), (turn.get("result") or {}).get("output")))
    return records


def _catalog(root: Path, level: str) -> dict[str, dict[str, Any]]:
    """API name -> description: level 3 from the lv3_apis classes, levels 1/2 from the recorded outputs."""
    if level == "3":
        if not (root / "lv3_apis").is_dir():
            raise ScorerUnavailable(f"the level-3 ToolSearcher catalog needs {root / 'lv3_apis'}")
        names = sorted({p.stem for p in (root / "lv3_apis").glob("*.py")} - {"__init__", "api", "tool_search"})
        catalog: dict[str, dict[str, Any]] = {}
        for stem in names:
            for name in _api_classes(root / "lv3_apis" / f"{stem}.py"):
                catalog.setdefault(name, loader.api_description(root, "lv3_apis", name))
        return catalog
    catalog = {}
    for _, output in _toolsearcher_records(root, level):
        for item in output if isinstance(output, list) else [output]:
            if isinstance(item, dict) and item.get("name"):
                catalog.setdefault(str(item["name"]), item)
    return catalog


def _api_classes(path: Path) -> list[str]:
    """Names of the classes in `path` that derive from API (read with ast; the module is not run)."""
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef)
            and any(isinstance(base, ast.Name) and base.id == "API" for base in node.bases)]


def _search_text(item: dict[str, Any]) -> str:
    name = str(item.get("name", ""))
    spaced = "".join(" " + ch.lower() if ch.isupper() else ch for ch in name).strip()
    return str(item.get("desc_for_search") or spaced + str(item.get("description", "")))


def _closest_api(root: Path, level: str, keywords: str, embedder: Embedder | None) -> Any:
    embed = embedder or default_embedder()
    catalog = _catalog(root, level)
    query = np.asarray(embed(keywords), dtype=float)
    best_name, best = None, 0.0
    for name, item in catalog.items():
        vector = np.asarray(embed(_search_text(item)), dtype=float)
        denominator = float(np.linalg.norm(query) * np.linalg.norm(vector))
        similarity = float(query @ vector) / denominator if denominator else 0.0
        if similarity > best:
            best_name, best = name, similarity
    if best_name is None:
        return None  # the search finds nothing: no output can equal the gold
    found = catalog[best_name]
    if level == "2" and "token" in (found.get("input_parameters") or {}) and "GetUserToken" in catalog:
        return [catalog["GetUserToken"], found]
    return found


@lru_cache(maxsize=1)
def default_embedder() -> Embedder:
    """paraphrase-MiniLM-L3-v2 through sentence-transformers (APIBANK_TOOLSEARCHER_MODEL may name a local copy)."""
    model_name = os.environ.get(MODEL_ENV, DEFAULT_MODEL)
    try:
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

        model = SentenceTransformer(model_name, device="cpu")
    except Exception as exc:  # not installed, or the model cannot be loaded here
        raise ScorerUnavailable(
            f"the official ToolSearcher scorer needs the embedding model {model_name} (sentence-transformers; "
            f"{MODEL_ENV} may point to a local copy): {type(exc).__name__}: {exc}. Refusing to score otherwise "
            f"({TOOLSEARCHER_SCORER_ENV}=keyword scores by keyword equality, marked non-conformant)") from exc

    def embed(text: str) -> Sequence[float]:
        return list(model.encode(text))

    return embed
