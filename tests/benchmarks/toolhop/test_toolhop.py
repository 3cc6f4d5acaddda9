import random
import re
from pathlib import Path

import pytest

from benchmarks.toolhop import BENCHMARK, DatasetExecDisabled, extract_final, matches, run_tool_sync
from benchmarks.toolhop.loader import load_pool
from core.benchmark import Benchmark
from core.errors import DataError, UsageError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def allow_exec(monkeypatch):
    monkeypatch.setenv("TOOLHOP_ALLOW_DATASET_EXEC", "1")


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _rows():
    pool = load_pool(str(FIXTURES))
    return pool["0"], pool["1"]


def test_protocol_and_splits():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert splits.test == tuple(str(i) for i in range(100))
    assert splits.eval_ids == splits.test


def test_loader_rows_and_private_fields():
    rows = BENCHMARK.load_rows(["1", "0"], str(FIXTURES))
    assert [r.id for r in rows] == ["1", "0"]
    row0 = rows[1]
    assert set(row0.task) == {"question", "tools"} and set(row0.gold) == {"answer", "functions", "tool_index"}
    assert row0.gold["answer"] == "1976"
    names = [t["function"]["name"] for t in BENCHMARK.native_tools(rows[0])]
    assert names == ["company_founder", "birth_city__0", "birth_city__1"]  # duplicate names made unique
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in BENCHMARK.native_tools(row0))
    rendered = BENCHMARK.render_task(row0)
    assert "Northern Lights Fall" in rendered and "YYYY-MM-DD" in rendered and "1976" not in rendered


def test_loader_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLHOP_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="TOOLHOP_DATA_DIR"):
        BENCHMARK.load_rows(["0"])
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows(["0"], str(tmp_path / "nope"))
    with pytest.raises(DataError, match="ToolHop.json not found"):
        BENCHMARK.load_rows(["0"], str(tmp_path))
    with pytest.raises(DataError, match="functions"):
        BENCHMARK.load_rows(["0"], str(FIXTURES / "wrong_layout"))
    with pytest.raises(DataError, match="'?999"):
        BENCHMARK.load_rows(["0", "999"], str(FIXTURES))
    monkeypatch.setenv("TOOLHOP_DATA_DIR", str(FIXTURES))
    assert BENCHMARK.load_rows(["0"])[0].id == "0"


@pytest.mark.parametrize("answer,gold,ok", [
    ("1976", "1976", True),
    ("1976.0", "1976", True),
    ("1,976", "1976", False),  # ToolHop's matcher: "1,976" parses as the tuple (1, 976), not 1976
    ("The year 1976", "1976", False),  # literal gold: literal equality only
    ("[1, 2]", "[1, 2]", True),
    ("paris, france", "Paris", True),  # substring rule for non-literal gold
    ("Lyon", "Paris", False),
    ("1990-05-12", "1990-05-12", True),
])
def test_matcher(answer, gold, ok):
    assert matches(answer, gold) is ok


def test_extract_final():
    assert extract_final("x <answer>a</answer> y <ANSWER> b </answer>") == "b"
    assert extract_final("<answer>open ended") == "open ended"
    assert extract_final("no tag") is None


def test_scorer_right_wrong_malformed_and_tool_result():
    row0, row1 = _rows()
    assert BENCHMARK.score(row0, AgentOutput(text="<answer>1976</answer>")).value == 1.0
    wrong = BENCHMARK.score(row0, AgentOutput(text="<answer>1977</answer>"))
    assert wrong.value == 0.0 and "does not match the gold answer '1976'" in wrong.feedback
    missing = BENCHMARK.score(row0, AgentOutput(text="It is 1976."))
    assert missing.malformed and "No <answer> tag found" in missing.feedback
    via_tool = BENCHMARK.score(row1, AgentOutput(text="I could not finish.",
                                                 metadata={"last_tool_result": '"Paris"'}))
    assert via_tool.value == 1.0 and via_tool.metadata["matched_via"] == "last_tool_result"
    gave_up = BENCHMARK.score(row1, AgentOutput(text="<answer>unknown</answer>"))
    assert gave_up.value == 0.0 and "Empty or 'unknown' answer" in gave_up.feedback
    assert BENCHMARK.vote_key(row1, AgentOutput(text="<answer>Paris, France.</answer>")) == "paris france"
    assert BENCHMARK.vote_key(row1, AgentOutput(text="<answer>unknown</answer>")) is None


def test_simulate_matches_failure_modes():
    rng = random.Random(2)
    for row in _rows():
        assert BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, None, rng).content)).value == 1.0
        for mode in BENCHMARK.failure_modes:
            assert 0.15 <= mode.rate <= 0.3
            score = BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, mode.name, rng).content))
            assert score.value == 0.0, mode.name
            assert re.search(mode.feedback_pattern, score.feedback), (mode.name, score.feedback)
            others = [m for m in BENCHMARK.failure_modes if m is not mode]
            assert not any(re.search(m.feedback_pattern, score.feedback) for m in others), mode.name


@pytest.mark.anyio
async def test_call_tool_requires_opt_in(monkeypatch):
    monkeypatch.delenv("TOOLHOP_ALLOW_DATASET_EXEC", raising=False)
    row0, _ = _rows()
    with pytest.raises(DatasetExecDisabled, match="TOOLHOP_ALLOW_DATASET_EXEC=1"):
        await BENCHMARK.call_tool(row0, "film_director_lookup", {"film_title": "Northern Lights Fall"})
    assert issubclass(DatasetExecDisabled, UsageError)


@pytest.mark.slow
@pytest.mark.anyio
async def test_fixture_tools_run(allow_exec):
    row0, row1 = _rows()
    director = await BENCHMARK.call_tool(row0, "film_director_lookup", {"film_title": " Northern  Lights Fall"})
    assert director == "Mara Ellison"  # the example-usage print at module level was dropped, not printed
    assert await BENCHMARK.call_tool(row0, "person_birth_year", {"name": director}) == "1976"
    assert await BENCHMARK.call_tool(row1, "company_founder", {"company": "Lumen"}) == \
        '{"company": "Lumen", "founder": "Henri Dubois"}'
    assert await BENCHMARK.call_tool(row1, "birth_city__0", {"person": "Henri Dubois"}) == "Paris"
    assert await BENCHMARK.call_tool(row1, "birth_city__1", {"person": "Henri Dubois"}) == "Lyon"
    error = await BENCHMARK.call_tool(row0, "film_director_lookup", {"film_title": "Other"})
    assert error == "error: ValueError: unknown film: Other"
    assert (await BENCHMARK.call_tool(row0, "no_such_tool", {})).startswith("error: unknown tool")
    bad_args = await BENCHMARK.call_tool(row0, "person_birth_year", {"wrong": 1})
    assert bad_args.startswith("error: TypeError")


def test_result_budget(allow_exec, monkeypatch):
    monkeypatch.setenv("TOOLHOP_TOOL_RESULT_CHAR_BUDGET", "50")
    out = run_tool_sync(["def big():\n    return 'x' * 100000\n"], "big", {})
    assert out == "x" * 50
    monkeypatch.delenv("TOOLHOP_TOOL_RESULT_CHAR_BUDGET")
    assert len(run_tool_sync(["def big():\n    return 'x' * 100000\n"], "big", {})) == 6000


@pytest.mark.parametrize("source,expected", [
    ("import os\ndef t():\n    return os.listdir('/')\n", "import of 'os' is not allowed"),
    ("def t():\n    import subprocess\n    return subprocess.run(['id'])\n", "import of 'subprocess' is not allowed"),
    ("def t():\n    return open('/etc/passwd').read()\n", "NameError: name 'open' is not defined"),
    ("def t():\n    return eval('1+1')\n", "NameError: name 'eval' is not defined"),
    ("def t():\n    return ().__class__.__base__.__subclasses__()\n", "is not allowed in ToolHop tools"),
    ("def t():\n    return __builtins__\n", "name '__builtins__' is not allowed"),
    ("def t():\n    from . import x\n", "relative imports are not allowed"),
])
def test_hostile_sources_are_contained(allow_exec, source, expected):
    out = run_tool_sync([source], "t", {}, index=0)
    assert out.startswith("error:") and expected in out


@pytest.mark.slow
def test_infinite_loop_is_killed(allow_exec):
    out = run_tool_sync(["def t():\n    while True:\n        pass\n"], "t", {}, index=0, cpu_seconds=1,
                        wall_seconds=30)
    assert out.startswith("error:") and ("CPU time limit" in out or "timed out" in out)


@pytest.mark.slow
def test_wall_clock_timeout_is_reported(allow_exec):
    source = "import time\ndef t():\n    time.sleep(30)\n"
    out = run_tool_sync([source], "t", {}, index=0, wall_seconds=1)
    assert out == "error: tool 't' timed out after 1 s and was killed"


def test_memory_bomb_is_contained(allow_exec):
    out = run_tool_sync(["def t():\n    return len([0] * (10 ** 10))\n"], "t", {}, index=0,
                        memory_bytes=512 << 20)
    assert out.startswith("error:") and "MemoryError" in out
