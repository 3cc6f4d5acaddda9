"""API-Bank scorer edge cases, one row per rule of protocol-v1 §5.7 apibank ("runners' API-Bank replay check") and
§10 API-Bank ("answer = one bracketed keyword-argument call (last parsable). Scoring: parse (positional args / bad
syntax -> 0), name must equal gold, then instantiate the API class (L3 uses lv3_apis), replay earlier calls,
execute prediction, compare via the API's own correctness check. ToolSearcher scorers: official (default for
levels all/2/3: recorded outputs, else closest API by paraphrase-MiniLM-L3-v2 embedding) ...").

The replay verdicts come from the checkout's own API classes (the fixture checkout in fixtures/api-bank mirrors
upstream's layout); every ToolSearcher case is cross-checked against the recorded ToolSearcher output read
straight from the data files. The embedding model is replaced by a labelled bag-of-words test double.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest

from benchmarks.apibank import ApiBankBenchmark
from benchmarks.apibank.scoring import ScorerUnavailable
from core.models import AgentOutput

ROOT = Path(__file__).parent / "fixtures" / "api-bank"
TOKEN = "a9s8d7f6g5h4j3k2l1"
L1_TOKEN = "level-1::AddReminder-level-1-1.jsonl::0"
L1_REMINDER = "level-1::AddReminder-level-1-1.jsonl::2"
L2_SEARCH = "level-2::QueryStock-level-2-1.jsonl::0"
L2_STOCK = "level-2::QueryStock-level-2-1.jsonl::2"
L3_SEARCH = "level-3::level-3.json::0::0"
L3_STOCK = "level-3::level-3.json::0::1"
REMINDER = f"[AddReminder(token='{TOKEN}', content='Call mom', time='2023-03-16 14:30:00')]"


def bag_of_words_embedder(text: str) -> list[float]:
    """Test double for paraphrase-MiniLM-L3-v2: word counts over a fixed vocabulary hash (lowercase words)."""
    vector = [0.0] * 512
    for word, count in Counter(re.findall(r"[a-z0-9]+", text.lower())).items():
        vector[sum(map(ord, word)) % 512] += count
    return vector


@pytest.fixture(autouse=True)
def _restore_modules():
    before = {k for k in sys.modules if k.split(".")[0] in ("apis", "lv3_apis")}
    yield
    for key in [k for k in sys.modules if k.split(".")[0] in ("apis", "lv3_apis") and k not in before]:
        del sys.modules[key]


PARSE = "protocol-v1 §10 API-Bank: parse (positional args / bad syntax -> 0)"
LAST = "protocol-v1 §10 API-Bank: answer = one bracketed keyword-argument call (last parsable)"
NAME = "protocol-v1 §10 API-Bank: name must equal gold"
REPLAY = ("protocol-v1 §10 API-Bank: instantiate the API class, replay earlier calls, execute prediction, compare "
          "via the API's own correctness check")
L3 = "protocol-v1 §10 API-Bank: L3 uses lv3_apis"
TS_REC = "protocol-v1 §10 API-Bank: ToolSearcher official (default for all/2/3): recorded outputs"
TS_EMB = "protocol-v1 §10 API-Bank: ToolSearcher official: else closest API by embedding"


class Case(NamedTuple):
    row: str
    text: str | None
    value: float
    check: str | None
    cite: str


TABLE = [
    Case(L1_REMINDER, REMINDER, 1.0, "replay", REPLAY),
    Case(L1_REMINDER, f"[AddReminder(time='2023-03-16 14:30:00', content='Call mom', token='{TOKEN}')]", 1.0,
         "replay", REPLAY + " (keyword order is free)"),
    Case(L1_REMINDER, f"[AddReminder(token='{TOKEN}', content='Call dad', time='2023-03-16 14:30:00')]", 0.0,
         "replay", REPLAY + " (a different value fails the API's check)"),
    Case(L1_REMINDER, "[AddReminder(token='nope', content='Call mom', time='2023-03-16 14:30:00')]", 0.0, "replay",
         REPLAY + " (the API itself rejects the token)"),
    Case(L1_REMINDER, f"[AddReminder(tok='{TOKEN}', content='Call mom', time='2023-03-16 14:30:00')]", 0.0,
         "replay", REPLAY + " (an undeclared parameter name)"),
    Case(L1_REMINDER, f"[AddReminder('{TOKEN}', 'Call mom', '2023-03-16 14:30:00')]", 0.0, None, PARSE),
    Case(L1_REMINDER, "[AddReminder(token=, content='Call mom')]", 0.0, None, PARSE + " (bad syntax)"),
    Case(L1_REMINDER, f"{REMINDER} and then [AddReminder(token=)]", 1.0, "replay", LAST),
    Case(L1_REMINDER, "[AddAlarm(token='x', time='y')]", 0.0, None, NAME),
    Case(L1_REMINDER, "I will add the reminder for you.", 0.0, None, LAST + " (no call -> 0)"),
    Case(L1_TOKEN, "[GetUserToken(username='JohnDoe', password='pass123')]", 1.0, "replay", REPLAY),
    Case(L2_STOCK, "Sure: [QueryStock(stock_code='SQQQ', date='2022-01-01')]", 1.0, "replay", REPLAY),
    Case(L2_STOCK, "[QueryStock(stock_code='SQQQ', date='2022-01-02')]", 0.0, "replay", REPLAY),
    Case(L3_STOCK, "[QueryStock(stock_code='AAPL', date='2023-03-10')]", 1.0, "replay", L3),
    Case(L3_STOCK, "[QueryStock(stock_code='AAPL', date='2023-03-11')]", 0.0, "replay", L3),
    Case(L2_SEARCH, "[ToolSearcher(keywords='stock price')]", 1.0, "toolsearcher_official", TS_REC),
    Case(L2_SEARCH, "[ToolSearcher(keywords='  STOCK   Price ')]", 1.0, "toolsearcher_official",
         TS_REC + " (keywords lowercased, whitespace collapsed)"),
    Case(L2_SEARCH, "[ToolSearcher(keywords='price of a stock')]", 1.0, "toolsearcher_official",
         TS_EMB + " (not keyword equality: other words that find the same API are right)"),
    Case(L2_SEARCH, "[ToolSearcher(keywords='weather')]", 0.0, "toolsearcher_official",
         TS_EMB + " (nothing resembles the keywords)"),
    Case(L3_SEARCH, "[ToolSearcher(keywords='query stock')]", 1.0, "toolsearcher_official", TS_REC + " (level 3)"),
    Case(L3_SEARCH, "[ToolSearcher(keywords='stock price query')]", 1.0, "toolsearcher_official",
         TS_EMB + " (level 3 catalog from lv3_apis)"),
]


def test_table_is_large_enough_and_cited():
    assert len(TABLE) >= 15
    assert all(case.cite.startswith("protocol-v1 §") for case in TABLE)


def _recorded_output(row_id: str, keywords: str):
    """Oracle for the recorded-output rule: the data file's own ToolSearcher record for these keywords."""
    key = " ".join(keywords.lower().split())
    if row_id.startswith("level-3"):
        steps = [s for sample in json.loads((ROOT / "test-data" / "level-3.json").read_text()) for s in sample["apis"]]
        found = [s["output"]["output"] for s in steps
                 if s["api_name"] == "ToolSearcher" and " ".join(s["input"]["keywords"].lower().split()) == key]
    else:
        turns = [json.loads(line) for path in sorted((ROOT / "lv1-lv2-samples" / "level-2-toolsearcher").glob("*.jsonl"))
                 for line in path.read_text().splitlines() if line.strip()]
        found = [t["result"]["output"] for t in turns if t.get("api_name") == "ToolSearcher"
                 and " ".join(t["param_dict"]["keywords"].lower().split()) == key]
    return found[0] if found else None


@pytest.mark.parametrize("case", TABLE, ids=[f"{i}:{c.row.split('::')[0]}" for i, c in enumerate(TABLE)])
def test_apibank_protocol_case(case: Case, monkeypatch):
    monkeypatch.delenv("APIBANK_TOOLSEARCHER_SCORER", raising=False)
    monkeypatch.delenv("APIBANK_ALLOW_ARGUMENT_MATCH", raising=False)
    bench = ApiBankBenchmark(root=str(ROOT), toolsearcher_embedder=bag_of_words_embedder)
    (row,) = bench.load_rows([case.row])
    score = bench.score(row, AgentOutput(text=case.text))
    assert score.value == case.value, (case.cite, score.feedback)
    assert score.metadata["check"] == case.check, case.cite
    assert score.metadata.get("protocol_conformant", True) is True
    if case.check == "toolsearcher_official" and score.metadata["toolsearcher_source"] == "recorded":
        keywords = re.search(r"keywords='([^']*)'", case.text or "").group(1)  # type: ignore[union-attr]
        assert (_recorded_output(case.row, keywords) == row.gold["result"]["output"]) == (score.value == 1.0)


def test_no_checkout_refuses_replay_and_marks_the_opt_in(tmp_path, monkeypatch):
    """protocol-v1 §5.7 apibank: the replay check or nothing -- never a silent switch to argument matching."""
    shutil.copytree(ROOT / "lv1-lv2-samples", tmp_path / "lv1-lv2-samples")
    shutil.copytree(ROOT / "test-data", tmp_path / "test-data")
    bench = ApiBankBenchmark(root=str(tmp_path), toolsearcher_embedder=bag_of_words_embedder)
    reminder, search = bench.load_rows([L1_REMINDER, L2_SEARCH])
    monkeypatch.delenv("APIBANK_ALLOW_ARGUMENT_MATCH", raising=False)
    assert "replay check needs the API-Bank checkout" in (bench.scorer_problem() or "")  # preflight
    assert ApiBankBenchmark(root=str(ROOT)).scorer_problem() is None
    with pytest.raises(ScorerUnavailable, match="replay check needs the API-Bank checkout"):
        bench.score(reminder, AgentOutput(text=REMINDER))
    # the official ToolSearcher reads only the recorded dialogues, so it still runs
    assert bench.score(search, AgentOutput(text="[ToolSearcher(keywords='stock price')]")).value == 1.0
    monkeypatch.setenv("APIBANK_ALLOW_ARGUMENT_MATCH", "1")
    assert bench.scorer_problem() is None
    marked = bench.score(reminder, AgentOutput(text=REMINDER))
    assert marked.value == 1.0 and marked.metadata == {**marked.metadata, "check": "argument_match",
                                                       "protocol_conformant": False}


def test_toolsearcher_without_embedding_model_refuses_or_marks_keyword(monkeypatch):
    """protocol-v1 §10 API-Bank: the official ToolSearcher needs its embedding model for unrecorded keywords;
    without it the scorer refuses, and the keyword scorer is an explicit, marked opt-in."""
    import benchmarks.apibank.scoring as scoring

    monkeypatch.delenv("APIBANK_TOOLSEARCHER_SCORER", raising=False)
    monkeypatch.setenv("APIBANK_TOOLSEARCHER_MODEL", str(ROOT / "no-such-model"))
    scoring.default_embedder.cache_clear()
    bench = ApiBankBenchmark(root=str(ROOT))
    (search,) = bench.load_rows([L2_SEARCH])
    assert bench.score(search, AgentOutput(text="[ToolSearcher(keywords='stock price')]")).value == 1.0  # recorded
    with pytest.raises(ScorerUnavailable, match="embedding model"):
        bench.score(search, AgentOutput(text="[ToolSearcher(keywords='price of a stock')]"))
    monkeypatch.setenv("APIBANK_TOOLSEARCHER_SCORER", "keyword")
    keyword = bench.score(search, AgentOutput(text="[ToolSearcher(keywords='price of a stock')]"))
    assert keyword.value == 0.0 and keyword.metadata["check"] == "toolsearcher_keyword"
    assert keyword.metadata["protocol_conformant"] is False
    scoring.default_embedder.cache_clear()
