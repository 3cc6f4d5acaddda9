"""The HotpotQA tools `wikipedia_search(query)` and `wikipedia_page(title)` (protocol-v1 section 10).

The protocol's tools query Wikipedia and never show the row's own context (its 2 gold + 8 distractor paragraphs).
So no retrieval source here takes a row: every source answers from a corpus fixed before the first rollout.

Sources (`RETRIEVAL_MODES`):
* `live`   - the live Wikipedia API over httpx (opt-in, network; results are not reproducible).
* `wiki_dir` - the official HotpotQA full-wiki abstracts corpus in a local directory, indexed once with SQLite FTS5
  BM25 (benchmarks/hotpotqa/corpus.py).
* `pooled` - every context paragraph of the whole loaded split file, pooled into one corpus (no Wikipedia at hand).
  The row's own paragraphs are among tens of thousands of others, but they are in the pool: the job is marked
  non-conformant.
With none of these configured the benchmark refuses to run (rather than leak the row's context).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

SEARCH_RESULTS = 3
SUMMARY_SENTENCES = 2
PAGE_CHARS = 4_000
RETRIEVAL_MODES = ("live", "wiki_dir", "pooled")
CONFORMANT_MODES = frozenset({"live", "wiki_dir"})

SEARCH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "wikipedia_search",
        "description": "Search Wikipedia. Returns the top 3 page titles, each with a 2-sentence summary.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "search terms"}},
                       "required": ["query"]},
    },
}
PAGE_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "wikipedia_page",
        "description": "Read a Wikipedia page by its exact title (text cut to 4,000 characters).",
        "parameters": {"type": "object", "properties": {"title": {"type": "string", "description": "page title"}},
                       "required": ["title"]},
    },
}
TOOL_ARGUMENT = {"wikipedia_search": "query", "wikipedia_page": "title"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_ABBREVIATION = re.compile(r"(?:\b(?:Jr|Sr|Dr|Mr|Mrs|Ms|St|Mt|Gen|Col|Lt|Inc|Co|Ltd|vs|No)|\b[A-Z])\.$")


class Retrieval(Protocol):
    """A Wikipedia source. It is built before any rollout and never sees a row."""

    mode: str
    corpus_id: str  # names the corpus (files' names and sizes, or the pooled titles) for the job identity

    async def search(self, query: str) -> list[tuple[str, str]]:
        """Up to SEARCH_RESULTS (title, first-sentences summary) pairs, best first."""
        ...

    async def page(self, title: str) -> tuple[str, str] | None:
        """(canonical title, full text) of the page with this title, or None."""
        ...


def split_sentences(text: str) -> list[str]:
    """Sentences of plain text (live extracts); a full stop after an abbreviation or an initial does not end one."""
    merged: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        if merged and _ABBREVIATION.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged


def summary_of(sentences: list[str] | tuple[str, ...] | str) -> str:
    """The first SUMMARY_SENTENCES sentences (a corpus page's sentence list, or a live extract's text)."""
    if isinstance(sentences, str):
        return " ".join(s.strip() for s in split_sentences(sentences)[:SUMMARY_SENTENCES]).strip()
    return "".join(sentences[:SUMMARY_SENTENCES]).strip()


def render_search(query: str, hits: list[tuple[str, str]]) -> str:
    if not hits:
        return f"No results for {query!r}."
    return "\n".join(f"{n}. {title}: {summary}" for n, (title, summary) in
                     enumerate(hits[:SEARCH_RESULTS], start=1))


def render_page(title: str, found: tuple[str, str] | None) -> str:
    if found is None:
        return f"No page titled {title!r}. Use wikipedia_search to find exact titles."
    return f"{found[0]}\n{found[1]}"[:PAGE_CHARS]


async def run_tool(retrieval: Retrieval, name: str, arguments: Any) -> str:
    """The text a wikipedia tool call returns; bad calls come back as an error text for the model."""
    key = TOOL_ARGUMENT.get(name)
    if key is None:
        return f"error: unknown tool {name!r}; tools are wikipedia_search and wikipedia_page"
    value = arguments.get(key) if isinstance(arguments, dict) else None
    if not isinstance(value, str) or not value.strip():
        return f"error: {name} needs one non-empty string argument {key!r}"
    if name == "wikipedia_search":
        return render_search(value, await retrieval.search(value))
    return render_page(value, await retrieval.page(value))
