"""The HotpotQA (distractor) benchmark: loader, official EM scorer (+ F1 rule), wikipedia tools, simulation."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Sequence

from benchmarks.base import DatasetBenchmark
from benchmarks.hotpotqa import loader, wiki
from benchmarks.hotpotqa.corpus import PooledCorpus, WikiDirCorpus
from benchmarks.hotpotqa.scoring import extract_answer, normalize_answer, score_answer, score_f1
from core.communication import ReportVocabulary
from core.errors import UsageError
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

PACKAGE_DIR = Path(__file__).resolve().parent

CONTRACT_V1 = "Output contract: end your reply with exactly one final line 'Answer: <short-form answer>'."
CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (HotpotQA). The last line of your reply must be 'Answer: <short-form answer>' "
    "and nothing else: yes/no questions take 'yes' or 'no'; dates a bare year or date; people their full name; "
    "places the place name; never an explanation or a full sentence. The scorer takes the text after the last "
    "'Answer:' and scores it by exact match after lowercasing and removing punctuation and articles."
)

FORMAT_NOTE = ("after 'Answer:' give only the short form: yes or no, a bare year, a full name, a place name; "
               "no explanation.")

FAILURE_MODES = (
    FailureMode("wrong_entity", r"Answer mismatch",
                "Resolve every hop with wikipedia_search / wikipedia_page before naming the final entity.", 0.25),
    FailureMode("verbose_answer", r"Answer too long",
                "After 'Answer:' give only the short form (a name, date, number, or yes/no), with no explanation.",
                0.25),
    FailureMode("missing_answer_line", r"No 'Answer:' line found",
                "Always finish with a final line 'Answer: <short answer>'.", 0.2),
)


class HotpotQABenchmark(DatasetBenchmark):
    """HotpotQA with tools that never read the row's context: `retrieval` is a Wikipedia source fixed before the
    first rollout (see wiki.py). Without one the benchmark refuses to run (`check_ready`)."""

    name = "hotpotqa"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "hotpotqa:protocol:v2"
    executes_tools = True
    report_vocabulary = ReportVocabulary(semi_tags=("ENTITIES", "HOPS", "ANSWER_CANDIDATE"),
                                         payload_fields=("entities", "hops", "evidence", "answer_candidate"))
    answer_format = "a final line 'Answer: <short-form answer>'"
    failure_modes = FAILURE_MODES
    independent_wall_clock_s = 120.0  # section 2.2: per-row wall-clock cap of an Independent replica
    format_note = FORMAT_NOTE  # sections 2.1 and 10: HotpotQA adds a short format note

    def __init__(self, retrieval: wiki.Retrieval | None = None) -> None:
        self.retrieval = retrieval

    @property
    def wiki_mode(self) -> str:
        return "none" if self.retrieval is None else self.retrieval.mode

    def configure(self, options: dict[str, Any]) -> "HotpotQABenchmark":
        """A copy with the retrieval source the command line chose: `wiki_live`, `wiki_dir` or `wiki_pooled`
        (exactly one; `data_dir` feeds the pooled corpus). No choice = no tools = refusal at `check_ready`."""
        chosen = [k for k in ("wiki_live", "wiki_dir", "wiki_pooled") if options.get(k)]
        if len(chosen) > 1:
            raise UsageError(f"HotpotQA retrieval: choose one of --wiki-live, --wiki-dir, --wiki-pooled "
                             f"(got {', '.join('--' + c.replace('_', '-') for c in chosen)})")
        if not chosen:
            return HotpotQABenchmark(None)
        if chosen[0] == "wiki_live":
            from benchmarks.hotpotqa.live import LiveWikipedia

            return HotpotQABenchmark(LiveWikipedia())
        if chosen[0] == "wiki_dir":
            return HotpotQABenchmark(WikiDirCorpus(str(options["wiki_dir"])))
        pool = loader.load_pool(options.get("data_dir"))
        return HotpotQABenchmark(PooledCorpus(
            (str(title), list(sentences)) for row in pool.values() for title, sentences in row.gold["context"]))

    def check_ready(self) -> None:
        """Refuse (one line, exit 2) rather than fall back to the row's own context paragraphs."""
        if self.retrieval is None:
            raise UsageError("HotpotQA needs a Wikipedia source for its tools and will not search the row's own "
                             "context: pass --wiki-dir DIR (HotpotQA abstracts corpus), --wiki-live (network), or "
                             "--wiki-pooled (whole-split paragraphs; non-conformant)")

    def tool_environment(self) -> dict[str, Any]:
        """What the tools read, for the job identity; `conformant` False for the pooled corpus."""
        return {"hotpotqa_retrieval": self.wiki_mode, "conformant": self.wiki_mode in wiki.CONFORMANT_MODES,
                "corpus": None if self.retrieval is None else self.retrieval.corpus_id}

    def load_rows(self, ids: Sequence[str], data_dir: str | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        return str(row.task["question"])

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        return [wiki.SEARCH_SCHEMA, wiki.PAGE_SCHEMA]

    async def call_tool(self, row: Row, name: str, arguments: dict[str, Any]) -> str:
        """The row is deliberately not passed on: no retrieval source can see its context."""
        if self.retrieval is None:
            self.check_ready()
        assert self.retrieval is not None
        return await wiki.run_tool(self.retrieval, name, arguments)

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
