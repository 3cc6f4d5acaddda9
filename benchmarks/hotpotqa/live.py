"""Live Wikipedia through the MediaWiki action API over httpx (opt-in: `--wiki-live`; needs network).

Search = `list=search` for the top 3 titles, then each title's intro extract cut to 2 sentences; page = the plain
text extract of the page (redirects followed). Transport and HTTP failures raise `WikipediaUnavailable`, which the
runner turns into an infrastructure failure of the rollout (retried with the same seed, never charged).
"""

from __future__ import annotations

from typing import Any

import httpx

from benchmarks.hotpotqa.wiki import SEARCH_RESULTS, summary_of
from core.errors import EndpointConnectionError

WIKIPEDIA_API = "https://en.wikipedia.org/w/api.php"
USER_AGENT = "mas-promptbench-engine/1 (research benchmark; hotpotqa wikipedia tools)"


class WikipediaUnavailable(EndpointConnectionError):
    kind = "wikipedia_unavailable"


class LiveWikipedia:
    mode = "live"
    corpus_id = "live:en.wikipedia.org"

    def __init__(self, client: httpx.AsyncClient | None = None, api_url: str = WIKIPEDIA_API,
                 timeout_s: float = 20.0) -> None:
        self._client = client
        self.api_url = api_url
        self.timeout_s = timeout_s

    async def _get(self, params: dict[str, Any]) -> dict[str, Any]:
        query = {**params, "format": "json", "formatversion": 2}
        try:
            if self._client is not None:
                response = await self._client.get(self.api_url, params=query)
            else:
                async with httpx.AsyncClient(timeout=self.timeout_s, headers={"User-Agent": USER_AGENT}) as http:
                    response = await http.get(self.api_url, params=query)
            response.raise_for_status()
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise WikipediaUnavailable(f"Wikipedia API request failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(data, dict):
            raise WikipediaUnavailable("Wikipedia API returned a non-object JSON body")
        return data

    async def _extract(self, title: str, intro: bool) -> tuple[str, str] | None:
        params: dict[str, Any] = {"action": "query", "prop": "extracts", "explaintext": 1, "redirects": 1,
                                  "titles": title}
        if intro:
            params["exintro"] = 1
        pages = (await self._get(params)).get("query", {}).get("pages", [])
        for page in pages if isinstance(pages, list) else []:
            if isinstance(page, dict) and not page.get("missing") and page.get("extract"):
                return str(page.get("title", title)), str(page["extract"]).strip()
        return None

    async def search(self, query: str) -> list[tuple[str, str]]:
        found = await self._get({"action": "query", "list": "search", "srsearch": query,
                                 "srlimit": SEARCH_RESULTS})
        titles = [str(hit["title"]) for hit in found.get("query", {}).get("search", []) if "title" in hit]
        hits = []
        for title in titles[:SEARCH_RESULTS]:
            extract = await self._extract(title, intro=True)
            hits.append((title, summary_of(extract[1]) if extract else ""))
        return hits

    async def page(self, title: str) -> tuple[str, str] | None:
        return await self._extract(title, intro=False)
