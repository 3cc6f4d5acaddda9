import hashlib
import random
import re
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks.apibank import BENCHMARK, ApiBankBenchmark, extract_call, format_call, parse_call
from benchmarks.apibank.calls import CallParseError
from benchmarks.apibank.scoring import ScorerUnavailable
from core.benchmark import Benchmark
from core.errors import DataError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = FIXTURES / "api-bank"
L1_TOKEN = "level-1::AddReminder-level-1-1.jsonl::0"
L1_REMINDER = "level-1::AddReminder-level-1-1.jsonl::2"
L2_SEARCH = "level-2::QueryStock-level-2-1.jsonl::0"
L2_STOCK = "level-2::QueryStock-level-2-1.jsonl::2"
L3_STOCK = "level-3::level-3.json::0::1"
ALL_IDS = [L1_TOKEN, L1_REMINDER, L2_SEARCH, L2_STOCK, L3_STOCK]
TOKEN = "a9s8d7f6g5h4j3k2l1"


@pytest.fixture(autouse=True)
def _restore_modules():
    before = {k for k in sys.modules if k.split(".")[0] in ("apis", "lv3_apis")}
    yield
    for key in [k for k in sys.modules if k.split(".")[0] in ("apis", "lv3_apis") and k not in before]:
        del sys.modules[key]


def unrelated_texts_embedder(text: str) -> list[float]:
    """Test double for the ToolSearcher embedding: every distinct text gets its own axis, so no API resembles
    keywords that were never recorded (the official search then finds nothing)."""
    vector = [0.0] * 4096
    vector[int(hashlib.sha256(text.encode()).hexdigest(), 16) % 4096] = 1.0
    return vector


@pytest.fixture
def bench() -> ApiBankBenchmark:
    return ApiBankBenchmark(root=str(ROOT), toolsearcher_embedder=unrelated_texts_embedder)


@pytest.fixture
def bench_without_checkout(tmp_path) -> ApiBankBenchmark:
    shutil.copytree(ROOT / "lv1-lv2-samples", tmp_path / "lv1-lv2-samples")
    shutil.copytree(ROOT / "test-data", tmp_path / "test-data")
    return ApiBankBenchmark(root=str(tmp_path), toolsearcher_embedder=unrelated_texts_embedder)


def test_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 100)
    assert splits.eval_ids == splits.test


def test_loader_tasks(bench):
    rows = bench.load_rows(ALL_IDS)
    assert [r.id for r in rows] == ALL_IDS
    token, reminder, search, stock, l3 = rows
    assert [t["role"] for t in token.task["dialogue"]] == ["User"]
    assert [t["role"] for t in reminder.task["dialogue"]] == ["User", "API", "AI"]
    assert reminder.gold["gold_call"] == f"[AddReminder(token='{TOKEN}', content='Call mom', time='2023-03-16 14:30:00')]"
    assert reminder.gold["prior_calls"] == [{"api_name": "GetUserToken",
                                             "param_dict": {"username": "JohnDoe", "password": "pass123"}}]
    names = [d["name"] for d in reminder.task["api_descriptions"]]
    assert names == ["AddReminder", "GetUserToken"]  # level 1: the needed APIs, described from the classes
    assert "three parameters" in reminder.task["api_descriptions"][0]["description"]
    assert [d["name"] for d in stock.task["api_descriptions"]] == ["ToolSearcher"]  # level 2: ToolSearcher only
    assert search.gold["api_name"] == "ToolSearcher"
    assert l3.task["level"] == "3" and l3.gold["api_name"] == "QueryStock"
    assert [t["role"] for t in l3.task["dialogue"]] == ["User", "API"]
    rendered = bench.render_task(reminder)
    assert "API-Request: [GetUserToken(username='JohnDoe', password='pass123')]->" in rendered
    assert "[AddReminder(" not in rendered  # the call to predict is not shown
    assert all("gold" not in str(r.task) for r in rows)


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("APIBANK_ROOT", raising=False)
    with pytest.raises(DataError, match="DAMO-ConvAI.*APIBANK_ROOT"):
        BENCHMARK.load_rows([L1_TOKEN])
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows([L1_TOKEN], str(tmp_path / "nope"))
    with pytest.raises(DataError, match="AddReminder-level-1-1.jsonl"):
        BENCHMARK.load_rows([L1_TOKEN], str(tmp_path))
    with pytest.raises(DataError, match="level-3.json"):
        BENCHMARK.load_rows([L3_STOCK], str(tmp_path))
    with pytest.raises(DataError, match="param_dict"):
        BENCHMARK.load_rows(["level-1::Bad-level-1-1.jsonl::0"], str(FIXTURES / "wrong_layout"))
    with pytest.raises(DataError, match="::8"):
        BENCHMARK.load_rows(["level-1::AddReminder-level-1-1.jsonl::8"], str(ROOT))
    with pytest.raises(DataError, match="malformed ID"):
        BENCHMARK.load_rows(["level-1::AddReminder-level-1-1.jsonl::1"], str(ROOT))
    with pytest.raises(DataError, match="malformed ID"):
        BENCHMARK.load_rows(["level-9::x::0"], str(ROOT))
    with pytest.raises(DataError, match="level-3.json::5::0"):
        BENCHMARK.load_rows(["level-3::level-3.json::5::0"], str(ROOT))
    monkeypatch.setenv("APIBANK_ROOT", str(ROOT))
    assert BENCHMARK.load_rows([L2_STOCK])[0].id == L2_STOCK


def test_call_parsing():
    text = "first [GetUserToken(username='a', password='b')] then\n[AddReminder(content='x (y) [z]', time='t')]"
    assert extract_call(text) == "[AddReminder(content='x (y) [z]', time='t')]"
    assert parse_call("[ToolSearcher(keywords='stock price')]") == ("ToolSearcher", {"keywords": "stock price"})
    assert parse_call("[GetToday()]") == ("GetToday", {})
    with pytest.raises(CallParseError) as info:
        parse_call("[QueryStock('SQQQ', date='x')]")
    assert info.value.reason == "positional"
    with pytest.raises(CallParseError):
        parse_call("[QueryStock(stock_code='SQQQ',, date)]")
    # the last PARSABLE call wins over a trailing broken one
    assert extract_call("[A(x='1')] and [B(x=)]") == "[A(x='1')]"
    assert format_call("Q", {"b": 1, "a": "x"}, sort=True) == "[Q(a='x', b=1)]"


def _score(bench, row, text):
    return bench.score(row, AgentOutput(text=text))


def test_scorer_replay_path(bench):
    token, reminder, _, stock, l3 = bench.load_rows([L1_TOKEN, L1_REMINDER, L2_SEARCH, L2_STOCK, L3_STOCK])
    right = _score(bench, reminder, f"[AddReminder(token='{TOKEN}', time='2023-03-16 14:30:00', content='Call mom')]")
    assert right.value == 1.0 and right.metadata["check"] == "replay"
    wrong_value = _score(bench, reminder, f"[AddReminder(token='{TOKEN}', content='Call dad', time='2023-03-16 14:30:00')]")
    assert wrong_value.value == 0.0 and "Argument mismatch" in wrong_value.feedback
    bad_token = _score(bench, reminder, "[AddReminder(token='nope', content='Call mom', time='2023-03-16 14:30:00')]")
    assert bad_token.value == 0.0 and bad_token.metadata["check"] == "replay"
    bad_key = _score(bench, reminder, f"[AddReminder(tok='{TOKEN}', content='Call mom', time='2023-03-16 14:30:00')]")
    assert bad_key.value == 0.0 and "invalid parameter name" in bad_key.feedback
    assert _score(bench, token, "[GetUserToken(username='JohnDoe', password='pass123')]").value == 1.0
    assert _score(bench, stock, "[QueryStock(stock_code='SQQQ', date='2022-01-01')]").value == 1.0
    assert _score(bench, l3, "Sure.\n[QueryStock(stock_code='AAPL', date='2023-03-10')]").value == 1.0
    assert _score(bench, l3, "[QueryStock(stock_code='AAPL', date='2023-03-11')]").value == 0.0


def test_scorer_argument_match_path(bench_without_checkout, monkeypatch):
    bench = bench_without_checkout
    (reminder,) = bench.load_rows([L1_REMINDER])
    call = f"[AddReminder(token='{TOKEN}', content='Call mom', time='2023-03-16 14:30:00')]"
    # protocol-v1 §10 API-Bank: without the checkout the replay check cannot run -> refused, never substituted
    monkeypatch.delenv("APIBANK_ALLOW_ARGUMENT_MATCH", raising=False)
    with pytest.raises(ScorerUnavailable, match="APIBANK_ALLOW_ARGUMENT_MATCH=1"):
        _score(bench, reminder, call)
    monkeypatch.setenv("APIBANK_ALLOW_ARGUMENT_MATCH", "1")  # explicit opt-in: marked non-conformant
    right = _score(bench, reminder, call)
    assert right.value == 1.0 and right.metadata["check"] == "argument_match"
    assert right.metadata["protocol_conformant"] is False
    wrong = _score(bench, reminder, f"[AddReminder(token='{TOKEN}', content='Call dad', time='2023-03-16 14:30:00')]")
    assert wrong.value == 0.0 and "different value(s) for content" in wrong.feedback
    missing = _score(bench, reminder, f"[AddReminder(token='{TOKEN}', content='Call mom')]")
    assert missing.value == 0.0 and "keys" in missing.feedback


def test_scorer_common_failures(bench):
    search, reminder = bench.load_rows([L2_SEARCH, L1_REMINDER])
    recorded = _score(bench, search, "[ToolSearcher(keywords='Stock  Price')]")
    assert recorded.value == 1.0 and recorded.metadata["toolsearcher_source"] == "recorded"
    ts_wrong = _score(bench, search, "[ToolSearcher(keywords='weather')]")
    assert ts_wrong.value == 0.0 and ts_wrong.metadata["check"] == "toolsearcher_official"
    assert ts_wrong.metadata["toolsearcher_source"] == "embedding"
    wrong_api = _score(bench, reminder, "[AddAlarm(token='x', time='y')]")
    assert wrong_api.value == 0.0 and "Wrong API: called AddAlarm, expected AddReminder" in wrong_api.feedback
    positional = _score(bench, reminder, f"[AddReminder('{TOKEN}', 'Call mom', '2023-03-16 14:30:00')]")
    assert positional.value == 0.0 and "positional arguments" in positional.feedback and not positional.malformed
    none = _score(bench, reminder, "I will add the reminder.")
    assert none.malformed and "No bracketed API call" in none.feedback
    assert bench.vote_key(reminder, AgentOutput(text="[Q(b=1, a='x')]")) == "[Q(a='x', b=1)]"
    assert bench.vote_key(reminder, AgentOutput(text="no call")) is None
    assert bench.native_tools(reminder) == []
    assert "[ApiName(" in bench.contract(1) and "PROTECTED FINAL OUTPUT CONTRACT" in bench.contract(2)


@pytest.mark.parametrize("use_checkout", [True, False])
def test_simulate_matches_failure_modes(use_checkout, bench, bench_without_checkout, monkeypatch):
    b = bench if use_checkout else bench_without_checkout
    if not use_checkout:
        monkeypatch.setenv("APIBANK_ALLOW_ARGUMENT_MATCH", "1")
    rng = random.Random(4)
    for row in b.load_rows(ALL_IDS):
        assert b.score(row, AgentOutput(text=b.simulate(row, None, rng).content)).value == 1.0, row.id
        for mode in b.failure_modes:
            assert 0.15 <= mode.rate <= 0.3
            score = b.score(row, AgentOutput(text=b.simulate(row, mode.name, rng).content))
            assert score.value == 0.0, (mode.name, row.id)
            assert re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
            others = [m for m in b.failure_modes if m is not mode]
            assert not any(re.search(m.feedback_pattern, score.feedback) for m in others), (mode.name, score.feedback)
