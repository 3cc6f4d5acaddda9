"""The HotpotQA tools `wikipedia_search(query)` and `wikipedia_page(title)`.

Offline mode (default; the only mode tests use): a per-row corpus built from the row's own context paragraphs
(the 2 gold + 8 distractor paragraphs of the distractor setting). Search ranks pages by token overlap with the
query (title tokens count twice) and returns the top 3 titles with their first 2 sentences; page returns the
page text cut to 4,000 characters.

Online mode (opt-in, `online=True`): the live Wikipedia API through httpx. Results are not reproducible; the
benchmark records which mode ran (`wiki_mode` in every Score's metadata).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SEARCH_RESULTS = 3
SUMMARY_SENTENCES = 2
PAGE_CHARS = 4_000
WIKIPEDIA_API = "https://en.wikipedia.org/w/api.php"

_TOKEN = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an the of in on at to for and or is are was were be by with from as that this which who whom what when "
    "where how did does do its it his her their".split()
)

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


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS]


@dataclass(frozen=True)
class Page:
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return "".join(self.sentences).strip()

    def summary(self) -> str:
        return "".join(self.sentences[:SUMMARY_SENTENCES]).strip()


class OfflineWiki:
    """A tiny Wikipedia over the given (title, sentences) paragraphs."""

    def __init__(self, paragraphs: list[list[Any]] | list[tuple[str, list[str]]]) -> None:
        self.pages: list[Page] = []
        seen: set[str] = set()
        for title, sentences in paragraphs:
            if title not in seen:
                seen.add(title)
                self.pages.append(Page(str(title), tuple(str(s) for s in sentences)))

    def search(self, query: str) -> str:
        wanted = set(_tokens(query))
        ranked = []
        for index, page in enumerate(self.pages):
            title_tokens, body_tokens = set(_tokens(page.title)), set(_tokens(page.text))
            score = 2 * len(wanted & title_tokens) + len(wanted & body_tokens)
            if score > 0:
                ranked.append((-score, index, page))
        ranked.sort(key=lambda item: (item[0], item[1]))
        if not ranked:
            return f"No results for {query!r}."
        return "\n".join(f"{n}. {page.title}: {page.summary()}" for n, (_, _, page) in
                         enumerate(ranked[:SEARCH_RESULTS], start=1))

    def page(self, title: str) -> str:
        wanted = title.strip().lower()
        for page in self.pages:
            if page.title.lower() == wanted:
                return f"{page.title}\n{page.text}"[:PAGE_CHARS]
        return f"No page titled {title!r}. Use wikipedia_search to find exact titles."


async def online_search(query: str, client: Any = None) -> str:  # pragma: no cover - live network, opt-in only
    import httpx

    async with (client or httpx.AsyncClient(timeout=20.0)) as http:
        found = await http.get(WIKIPEDIA_API, params={"action": "query", "list": "search", "srsearch": query,
                                                      "srlimit": SEARCH_RESULTS, "format": "json"})
        titles = [hit["title"] for hit in found.json().get("query", {}).get("search", [])]
        if not titles:
            return f"No results for {query!r}."
        lines = []
        for n, title in enumerate(titles, start=1):
            extract = await _extract(http, title, intro=True)
            sentences = re.split(r"(?<=[.!?])\s+", extract)
            lines.append(f"{n}. {title}: {' '.join(sentences[:SUMMARY_SENTENCES])}")
        return "\n".join(lines)


async def online_page(title: str, client: Any = None) -> str:  # pragma: no cover - live network, opt-in only
    import httpx

    async with (client or httpx.AsyncClient(timeout=20.0)) as http:
        text = await _extract(http, title, intro=False)
    return f"{title}\n{text}"[:PAGE_CHARS] if text else f"No page titled {title!r}."


async def _extract(http: Any, title: str, intro: bool) -> str:  # pragma: no cover - live network
    params = {"action": "query", "prop": "extracts", "explaintext": 1, "redirects": 1, "titles": title,
              "format": "json"}
    if intro:
        params["exintro"] = 1
    pages = (await http.get(WIKIPEDIA_API, params=params)).json().get("query", {}).get("pages", {})
    return next((str(p.get("extract", "")) for p in pages.values()), "")
