"""The HotpotQA (distractor) benchmark: loader, official EM scorer (+ F1 rule), wikipedia tools, simulation."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.hotpotqa import loader, wiki
from benchmarks.hotpotqa.scoring import extract_answer, normalize_answer, score_answer, score_f1
from core.benchmark import FailureMode, SimReply, Splits
from core.models import AgentOutput, Row, Score

PACKAGE_DIR = Path(__file__).resolve().parent

CONTRACT_V1 = "Output contract: end your reply with exactly one final line 'Answer: <short-form answer>'."
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (HotpotQA). The last line of your reply must be 'Answer: <short-form answer>' "
    "and nothing else: yes/no questions take 'yes' or 'no'; dates a bare year or date; people their full name; "
    "places the place name; never an explanation or a full sentence. The scorer takes the text after the last "
    "'Answer:' and scores it by exact match after lowercasing and removing punctuation and articles."
)

FAILURE_MODES = (
    FailureMode("wrong_entity", r"Answer mismatch",
                "Resolve every hop with wikipedia_search / wikipedia_page before naming the final entity.", 0.25),
    FailureMode("verbose_answer", r"Answer too long",
                "After 'Answer:' give only the short form (a name, date, number, or yes/no), with no explanation.",
                0.25),
    FailureMode("missing_answer_line", r"No 'Answer:' line found",
                "Always finish with a final line 'Answer: <short answer>'.", 0.2),
)


class HotpotQABenchmark:
    name = "hotpotqa"
    answer_format = "a final line 'Answer: <short-form answer>'"
    failure_modes = FAILURE_MODES

    def __init__(self, online: bool = False) -> None:
        self.online = online

    @property
    def wiki_mode(self) -> str:
        return "online" if self.online else "offline"

    def splits(self) -> Splits:
        from benchmarks.splits import load_splits

        return load_splits(self.name, PACKAGE_DIR)

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        return str(row.task["question"])

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [wiki.SEARCH_SCHEMA, wiki.PAGE_SCHEMA]

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        args = arguments if isinstance(arguments, dict) else {}
        key = {"wikipedia_search": "query", "wikipedia_page": "title"}.get(name)
        if key is None:
            return f"error: unknown tool {name!r}; tools are wikipedia_search and wikipedia_page"
        value = args.get(key)
        if not isinstance(value, str) or not value.strip():
            return f"error: {name} needs one non-empty string argument {key!r}"
        if self.online:  # pragma: no cover - live network, opt-in only
            return await (wiki.online_search(value) if name == "wikipedia_search" else wiki.online_page(value))
        corpus = wiki.OfflineWiki(row.gold.get("context", []))
        return corpus.search(value) if name == "wikipedia_search" else corpus.page(value)

    def contract(self, version: int = 1) -> str:
        return CONTRACT_V2 if version == 2 else CONTRACT_V1

    def score(self, row: Row, output: AgentOutput) -> Score:
        result = score_answer(output.text, str(row.gold["answer"]))
        return result.model_copy(update={"metadata": {**result.metadata, "wiki_mode": self.wiki_mode}})

    def score_f1(self, row: Row, output: AgentOutput) -> float:
        """Second reporting rule (runners report EM + token F1)."""
        return score_f1(output.text, str(row.gold["answer"]))

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        answer, _ = extract_answer(output.text)
        if answer is None:
            return None
        return normalize_answer(answer) or None

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        gold = str(row.gold["answer"])
        if mode is None:
            return SimReply(f"Both hops check out in the retrieved pages.\nAnswer: {gold}")
        if mode == "wrong_entity":
            return SimReply(f"The first page seems to settle it.\nAnswer: {self._wrong_answer(row, gold, rng)}")
        if mode == "verbose_answer":
            return SimReply(f"Answer: {gold}, according to the two pages I read")
        if mode == "missing_answer_line":
            return SimReply(f"After reading both pages I am fairly confident it is {gold}, as the second page says.")
        raise ValueError(f"unknown HotpotQA failure mode {mode!r}")

    @staticmethod
    def _wrong_answer(row: Row, gold: str, rng: random.Random) -> str:
        gold_norm = normalize_answer(gold)
        if gold_norm in ("yes", "no"):
            return "no" if gold_norm == "yes" else "yes"
        titles = [str(title) for title, _ in row.gold.get("context", [])]
        candidates = [t for t in titles if normalize_answer(t) and f" {gold_norm} " not in f" {normalize_answer(t)} "]
        return rng.choice(candidates) if candidates else "Unknown Person"


BENCHMARK = HotpotQABenchmark()


def tools_for(row: Row) -> list[dict[str, Any]]:
    return BENCHMARK.native_tools(row)


async def call_tool(row: Row, name: str, arguments: dict[str, Any]) -> str:
    return await BENCHMARK.call_tool(row, name, arguments)
