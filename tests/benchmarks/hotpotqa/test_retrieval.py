"""HotpotQA retrieval never reads the row's own context: wiki-dir (FTS5 over the official abstracts layout), live
Wikipedia (httpx, mocked with respx), the pooled corpus (non-conformant), and refusal by default."""

from __future__ import annotations

import bz2
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import respx

from benchmarks.hotpotqa import BENCHMARK, HotpotQABenchmark
from benchmarks.hotpotqa.corpus import INDEX_DIR, INDEX_NAME, PooledCorpus, WikiDirCorpus
from benchmarks.hotpotqa.live import WIKIPEDIA_API, LiveWikipedia, WikipediaUnavailable
from benchmarks.hotpotqa.loader import load_pool
from core.errors import DataError, InfrastructureError, UsageError
from core.models import Row
from engine.benchmark_setup import configure_benchmark

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[3]
PAGES_AA = [
    {"id": "1", "url": "https://en.wikipedia.org/wiki?curid=1", "title": "Scott Derrickson",
     "text": ["Scott Derrickson (born July 16, 1966) is an American director.", " He lives in Los Angeles.",
              " He directed Doctor Strange."]},
    {"id": "2", "url": "https://en.wikipedia.org/wiki?curid=2", "title": "Ed Wood",
     "text": ["Edward Davis Wood Jr. was an American filmmaker.", " He made low-budget films.",
              " He died in 1978."]},
]
PAGES_AB = [
    {"id": "3", "url": "https://en.wikipedia.org/wiki?curid=3", "title": "Ed Wood (film)",
     "text": ["Ed Wood is a 1994 American biographical film directed by Tim Burton.", " It stars Johnny Depp."]},
    {"id": "4", "url": "https://en.wikipedia.org/wiki?curid=4", "title": "Long Page", "text": ["word " * 1500]},
]
# A row whose own context is unique text that exists in no corpus: any tool output containing it is a leak.
LEAK = "Zanzibarquux Velloran"
SPY = Row(id="spy", dataset="hotpotqa", task={"question": f"Who founded {LEAK}?", "type": "bridge", "level": "hard"},
          gold={"answer": LEAK, "supporting_facts": [[LEAK, 0]],
                "context": [[LEAK, [f"{LEAK} was founded by {LEAK} Senior.", f" {LEAK} is in Ed Wood country."]],
                            ["Scott Derrickson", [f"{LEAK} Derrickson secret sentence."]]]})


def write_corpus(root: Path) -> Path:
    """The published layout: subdirectories of bz2-compressed JSON-lines files."""
    for sub, name, pages in (("AA", "wiki_00.bz2", PAGES_AA), ("AB", "wiki_00.bz2", PAGES_AB)):
        (root / sub).mkdir(parents=True, exist_ok=True)
        with bz2.open(root / sub / name, "wt", encoding="utf-8") as fh:
            for page in pages:
                fh.write(json.dumps(page) + "\n")
    return root


def leaked(text: str) -> bool:
    """True when a tool output holds any sentence of the spy row's own context paragraphs."""
    return any(sentence.strip() in text for _, sentences in SPY.gold["context"] for sentence in sentences)


# ------------------------------------------------------------------ default: refuse
def test_default_benchmark_refuses_rather_than_leak():
    assert BENCHMARK.retrieval is None and BENCHMARK.wiki_mode == "none"
    with pytest.raises(UsageError, match="will not search the row's own context"):
        BENCHMARK.check_ready()
    with pytest.raises(UsageError):
        configure_benchmark(BENCHMARK, {}, None)


@pytest.mark.anyio
async def test_default_call_tool_raises_instead_of_searching_the_row():
    with pytest.raises(UsageError):
        await BENCHMARK.call_tool(SPY, "wikipedia_search", {"query": LEAK})


@pytest.mark.slow
@pytest.mark.parametrize("command", ["job", "run"])
def test_cli_refuses_hotpotqa_without_a_wikipedia_source(tmp_path, command):
    out = tmp_path / "out"
    args = [sys.executable, "-m", "engine", command, "--cell", "task=hotpotqa,topology=single",
            "--data-dir", str(FIXTURES / "hf"), "--out", str(out / "p.jsonl" if command == "run" else out)]
    if command == "job":
        args += ["--method", "identity"]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--wiki-dir" in lines[0] and "row's own context" in lines[0]
    assert not out.exists()


def test_cli_refuses_two_sources_and_wiki_flags_on_other_tasks(tmp_path):
    with pytest.raises(UsageError, match="choose one"):
        configure_benchmark(BENCHMARK, {"wiki_live": True, "wiki_pooled": True}, None)
    from benchmarks.registry import get_benchmark

    with pytest.raises(UsageError, match="--wiki-dir applies only to task=hotpotqa"):
        configure_benchmark(get_benchmark("gpqa"), {"wiki_dir": str(tmp_path)}, None)


# ------------------------------------------------------------------ wiki-dir: FTS5 over the official layout
@pytest.mark.anyio
async def test_wiki_dir_search_and_page(tmp_path):
    corpus = WikiDirCorpus(write_corpus(tmp_path / "wiki"))
    assert corpus.page_count == 4
    hits = await corpus.search("Ed Wood filmmaker")
    assert [title for title, _ in hits][:2] == ["Ed Wood", "Ed Wood (film)"] and len(hits) == 2  # BM25 order
    assert (await corpus.search("Tim Burton Johnny Depp"))[0][0] == "Ed Wood (film)"
    assert len(await corpus.search("Ed Wood Scott Derrickson word")) == 3  # top 3 only
    bench = HotpotQABenchmark(corpus)
    found = await bench.call_tool(SPY, "wikipedia_search", {"query": "Scott Derrickson"})
    first = found.splitlines()[0]
    assert first == "1. Scott Derrickson: Scott Derrickson (born July 16, 1966) is an American director. He lives " \
                    "in Los Angeles."  # two sentences only
    page = await bench.call_tool(SPY, "wikipedia_page", {"title": "scott derrickson"})
    assert page.startswith("Scott Derrickson\n") and "Doctor Strange" in page
    assert len(await bench.call_tool(SPY, "wikipedia_page", {"title": "Long Page"})) == 4000
    assert "No page titled" in await bench.call_tool(SPY, "wikipedia_page", {"title": "Nowhere"})
    assert await bench.call_tool(SPY, "wikipedia_search", {"query": "qqqzzz"}) == "No results for 'qqqzzz'."
    assert (await bench.call_tool(SPY, "wikipedia_search", {"query": "  "})).startswith("error:")
    assert (await bench.call_tool(SPY, "calculator", {"expression": "1"})).startswith("error: unknown tool")
    env = bench.tool_environment()
    assert env["hotpotqa_retrieval"] == "wiki_dir" and env["conformant"] is True
    assert env["corpus"] == corpus.corpus_id and env["corpus"].startswith("wiki_dir:")


def test_wiki_dir_is_indexed_once_and_rebuilt_when_files_change(tmp_path):
    root = write_corpus(tmp_path / "wiki")
    first = WikiDirCorpus(root)
    index = root / INDEX_DIR / INDEX_NAME
    stamp = index.stat().st_mtime_ns
    os.utime(index, ns=(stamp - 10**9, stamp - 10**9))
    stamp = index.stat().st_mtime_ns
    WikiDirCorpus(root)
    assert index.stat().st_mtime_ns == stamp  # reused, not rebuilt
    with bz2.open(root / "AB" / "wiki_01.bz2", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "9", "url": "u", "title": "New Page", "text": ["Fresh text here."]}) + "\n")
    corpus = WikiDirCorpus(root)
    assert corpus.page_count == 5 and corpus.corpus_id != first.corpus_id  # another corpus, another job identity
    assert not [p for p in index.parent.iterdir() if p.name.endswith(".tmp")]


def test_wiki_dir_bad_input(tmp_path):
    with pytest.raises(DataError, match="not a directory"):
        WikiDirCorpus(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no .bz2/.jsonl"):
        WikiDirCorpus(tmp_path / "empty")
    bad = tmp_path / "bad" / "AA"
    bad.mkdir(parents=True)
    with bz2.open(bad / "wiki_00.bz2", "wt", encoding="utf-8") as fh:
        fh.write('{"id": "1", "url": "u"}\n')
    with pytest.raises(DataError, match="title and text"):
        WikiDirCorpus(tmp_path / "bad")
    assert not (tmp_path / "bad" / INDEX_DIR / INDEX_NAME).exists()  # nothing half-way


# ------------------------------------------------------------------ live Wikipedia over httpx (respx, no network)
def _live_routes(router: respx.MockRouter) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        params = request.url.params
        if params.get("list") == "search":
            return httpx.Response(200, json={"query": {"search": [{"title": "Ed Wood"}, {"title": "Ed Wood (film)"}]}})
        title = params["titles"]
        pages = {p["title"]: "".join(p["text"]) for p in PAGES_AA + PAGES_AB}
        if title not in pages:
            return httpx.Response(200, json={"query": {"pages": [{"title": title, "missing": True}]}})
        return httpx.Response(200, json={"query": {"pages": [{"title": title, "extract": pages[title]}]}})

    router.get(WIKIPEDIA_API).mock(side_effect=answer)


@pytest.mark.anyio
async def test_live_wikipedia_search_and_page():
    with respx.mock(assert_all_called=True) as router:
        _live_routes(router)
        async with httpx.AsyncClient() as client:
            bench = HotpotQABenchmark(LiveWikipedia(client))
            found = await bench.call_tool(SPY, "wikipedia_search", {"query": "Ed Wood"})
            assert found.splitlines() == [
                "1. Ed Wood: Edward Davis Wood Jr. was an American filmmaker. He made low-budget films.",
                "2. Ed Wood (film): Ed Wood is a 1994 American biographical film directed by Tim Burton. It stars "
                "Johnny Depp."]
            page = await bench.call_tool(SPY, "wikipedia_page", {"title": "Ed Wood"})
            assert page.startswith("Ed Wood\n") and "died in 1978" in page
            assert "No page titled" in await bench.call_tool(SPY, "wikipedia_page", {"title": "Nope"})
        sent = [call.request.url.params for call in router.calls]
        assert sent[0]["list"] == "search" and sent[0]["srsearch"] == "Ed Wood"
    assert bench.tool_environment() == {"hotpotqa_retrieval": "live", "conformant": True,
                                        "corpus": "live:en.wikipedia.org"}


@pytest.mark.anyio
async def test_live_wikipedia_outage_is_an_infrastructure_error():
    with respx.mock() as router:
        router.get(WIKIPEDIA_API).mock(return_value=httpx.Response(503))
        async with httpx.AsyncClient() as client:
            with pytest.raises(WikipediaUnavailable) as info:
                await LiveWikipedia(client).search("anything")
    assert isinstance(info.value, InfrastructureError)


# ------------------------------------------------------------------ pooled: whole data file, non-conformant
@pytest.mark.anyio
async def test_pooled_corpus_spans_the_data_file_and_is_non_conformant():
    bench = configure_benchmark(BENCHMARK, {"wiki_pooled": True}, str(FIXTURES / "hf"))
    env = bench.tool_environment()
    assert env["hotpotqa_retrieval"] == "pooled" and env["conformant"] is False and env["corpus"].startswith("pooled:")
    pool = load_pool(str(FIXTURES / "hf"))
    titles = {str(t) for row in pool.values() for t, _ in row.gold["context"]}
    assert isinstance(bench.retrieval, PooledCorpus) and bench.retrieval.page_count == len(titles)
    assert "Ed Wood" in await bench.call_tool(SPY, "wikipedia_search", {"query": "Ed Wood filmmaker"})


# ------------------------------------------------------------------ no mode reads the row's context
@pytest.mark.anyio
async def test_no_retrieval_mode_returns_the_rows_own_paragraphs(tmp_path):
    """The spy row's context paragraphs exist nowhere else: whatever the tools are asked (the row's question, its
    gold titles, its unique words), no mode returns them; the default mode refuses to run at all."""
    corpus = WikiDirCorpus(write_corpus(tmp_path / "wiki"))
    pooled = configure_benchmark(BENCHMARK, {"wiki_pooled": True}, str(FIXTURES / "hf"))
    queries = [SPY.task["question"], LEAK, "Scott Derrickson", f"{LEAK} Derrickson secret sentence",
               f"{LEAK} founded Senior Ed Wood country"]
    with respx.mock() as router:
        _live_routes(router)
        async with httpx.AsyncClient() as client:
            for bench in (HotpotQABenchmark(corpus), HotpotQABenchmark(LiveWikipedia(client)), pooled):
                for query in queries:
                    assert not leaked(await bench.call_tool(SPY, "wikipedia_search", {"query": query}))
                for title, _ in SPY.gold["context"]:
                    assert not leaked(await bench.call_tool(SPY, "wikipedia_page", {"title": title}))
    with pytest.raises(UsageError):
        await BENCHMARK.call_tool(SPY, "wikipedia_page", {"title": LEAK})
