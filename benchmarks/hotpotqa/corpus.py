"""A Wikipedia-abstracts corpus in SQLite FTS5, ranked by BM25 (no dependency beyond the standard library).

Sources:
* `WikiDirCorpus(dir)` - the official HotpotQA full-wiki abstracts release
  (enwiki-20171001-pages-meta-current-withlinks-abstracts): subdirectories (AA, AB, ...) of bz2-compressed
  JSON-lines files, one page per line {id, url, title, text: [sentences, ...], ...}. Uncompressed .jsonl files are
  read too. Indexed once into `<dir>/.mpb-index/abstracts-fts5-v1.sqlite` (written to a temporary file and renamed,
  so an interrupted build leaves nothing half-way); the index records the source files' names and sizes and is
  rebuilt when they change.
* `PooledCorpus(paragraphs)` - an in-memory index over given (title, sentences) paragraphs (the pooled mode).

Search = BM25 over title (weight 2) and text (weight 1) with the query's word tokens OR-ed; ties by insertion
order, so results are deterministic. Page = exact title, case-insensitive, first page of that title.
Reads run in a worker thread (anyio.to_thread), never on the event loop; each read opens its own connection.
"""

from __future__ import annotations

import bz2
import hashlib
import json
import os
import re
import sqlite3
import tempfile
from contextlib import closing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio

from benchmarks.hotpotqa.wiki import SEARCH_RESULTS, summary_of
from core.errors import DataError

INDEX_DIR = ".mpb-index"
INDEX_NAME = "abstracts-fts5-v1.sqlite"
SOURCE_SUFFIXES = (".bz2", ".jsonl", ".json")
_WORD = re.compile(r"\w+", re.UNICODE)
_SCHEMA = (
    "CREATE VIRTUAL TABLE pages USING fts5(title, text, tokenize='unicode61 remove_diacritics 2');"
    "CREATE TABLE titles (title_key TEXT NOT NULL, page_rowid INTEGER NOT NULL);"
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
)
_SEARCH = ("SELECT title, text FROM pages WHERE pages MATCH ? ORDER BY bm25(pages, 2.0, 1.0), rowid LIMIT ?")
_PAGE = ("SELECT p.title, p.text FROM titles t JOIN pages p ON p.rowid = t.page_rowid WHERE t.title_key = ? "
         "ORDER BY t.page_rowid LIMIT 1")


def fts_query(text: str) -> str | None:
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words) or None


def _insert(conn: sqlite3.Connection, pages: Iterable[tuple[str, list[str]]]) -> int:
    count = 0
    for title, sentences in pages:
        cur = conn.execute("INSERT INTO pages (title, text) VALUES (?, ?)", (title, "\x1f".join(sentences)))
        conn.execute("INSERT INTO titles (title_key, page_rowid) VALUES (?, ?)", (title.strip().lower(),
                                                                                 cur.lastrowid))
        count += 1
    conn.execute("CREATE INDEX titles_key ON titles (title_key)")
    return count


def _split(text: str) -> list[str]:
    return text.split("\x1f")


class _FtsCorpus:
    mode = "wiki_dir"

    def _connect(self) -> sqlite3.Connection:
        raise NotImplementedError

    def _search_sync(self, query: str) -> list[tuple[str, str]]:
        match = fts_query(query)
        if match is None:
            return []
        with closing(self._connect()) as conn:
            rows = conn.execute(_SEARCH, (match, SEARCH_RESULTS)).fetchall()
        return [(str(title), summary_of(_split(text))) for title, text in rows]

    def _page_sync(self, title: str) -> tuple[str, str] | None:
        with closing(self._connect()) as conn:
            row = conn.execute(_PAGE, (title.strip().lower(),)).fetchone()
        return None if row is None else (str(row[0]), "".join(_split(row[1])).strip())

    async def search(self, query: str) -> list[tuple[str, str]]:
        return await anyio.to_thread.run_sync(self._search_sync, query)

    async def page(self, title: str) -> tuple[str, str] | None:
        return await anyio.to_thread.run_sync(self._page_sync, title)


def source_files(wiki_dir: Path) -> list[Path]:
    return sorted(p for p in wiki_dir.rglob("*") if p.is_file() and INDEX_DIR not in p.parts
                  and p.name.endswith(SOURCE_SUFFIXES))


def _read_pages(path: Path) -> Iterator[tuple[str, list[str]]]:
    opener: Any = bz2.open if path.name.endswith(".bz2") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                record = json.loads(line)
                text = record.get("text") if isinstance(record, dict) else None
                if not isinstance(record, dict) or "title" not in record or text is None:
                    raise DataError(f"{path} line {number}: expected a JSON object with title and text")
                sentences = [str(s) for s in text] if isinstance(text, list) else [str(text)]
                yield str(record["title"]), sentences
    except (OSError, EOFError, ValueError) as exc:
        raise DataError(f"{path}: not a readable (bz2) JSON-lines abstracts file ({exc})") from exc


class WikiDirCorpus(_FtsCorpus):
    """The official HotpotQA abstracts corpus from a local directory, indexed once."""

    def __init__(self, wiki_dir: str | Path) -> None:
        self.wiki_dir = Path(wiki_dir).expanduser()
        if not self.wiki_dir.is_dir():
            raise DataError(f"--wiki-dir {self.wiki_dir} is not a directory")
        self.files = source_files(self.wiki_dir)
        if not self.files:
            raise DataError(f"--wiki-dir {self.wiki_dir} holds no .bz2/.jsonl abstracts files (expected the "
                            "HotpotQA enwiki abstracts release: subdirectories of bz2 JSON-lines files)")
        self.index_path = self.wiki_dir / INDEX_DIR / INDEX_NAME
        self.signature = json.dumps([[str(p.relative_to(self.wiki_dir)), p.stat().st_size] for p in self.files])
        self.corpus_id = "wiki_dir:" + hashlib.sha256(self.signature.encode()).hexdigest()[:16]
        if self._stored_signature() != self.signature:
            self._build()

    def _stored_signature(self) -> str | None:
        if not self.index_path.is_file():
            return None
        try:
            with closing(self._connect()) as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'sources'").fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else str(row[0])

    def _build(self) -> None:
        self.index_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".abstracts.", suffix=".tmp", dir=self.index_path.parent)
        os.close(fd)
        try:
            conn = sqlite3.connect(tmp)
            try:
                conn.executescript(_SCHEMA)
                count = _insert(conn, (page for path in self.files for page in _read_pages(path)))
                conn.execute("INSERT INTO meta VALUES ('sources', ?), ('pages', ?)", (self.signature, str(count)))
                conn.commit()
            finally:
                conn.close()
            os.replace(tmp, self.index_path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.index_path}?mode=ro", uri=True)

    @property
    def page_count(self) -> int:
        with closing(self._connect()) as conn:
            return int(conn.execute("SELECT value FROM meta WHERE key = 'pages'").fetchone()[0])


class PooledCorpus(_FtsCorpus):
    """Every given paragraph in one shared in-memory index (the pooled, non-conformant mode)."""

    mode = "pooled"

    def __init__(self, paragraphs: Iterable[tuple[str, list[str]]]) -> None:
        seen: dict[tuple[str, tuple[str, ...]], None] = {}
        for title, sentences in paragraphs:
            seen.setdefault((str(title), tuple(str(s) for s in sentences)), None)
        self._uri = f"file:mpb-pooled-{id(self)}?mode=memory&cache=shared"
        self._keeper = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
        self._keeper.executescript(_SCHEMA)
        self.page_count = _insert(self._keeper, ((t, list(s)) for t, s in seen))
        digest = hashlib.sha256(json.dumps(sorted(t for t, _ in seen), ensure_ascii=False).encode())
        self.corpus_id = f"pooled:{self.page_count}:{digest.hexdigest()[:16]}"
        self._keeper.commit()

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self._uri, uri=True)
