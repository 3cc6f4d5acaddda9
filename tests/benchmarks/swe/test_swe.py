from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from benchmarks.swe import BENCHMARK, HarnessUnavailable, check_patch
from benchmarks.swe import harness
from core.benchmark import Benchmark
from core.errors import DataError, UsageError
from core.models import AgentOutput

FIXTURES = Path(__file__).parent / "fixtures" / "jsonl"
IDS = ["django__django-13810", "astropy__astropy-7166"]
PACKAGE = Path(__file__).parents[3] / "benchmarks" / "swe"
REFERENCE = Path("/work/shared/reference/benchmarks/swe")

GOOD = """Fix:
```diff
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1,3 +1,3 @@
 def f():
-    return 1
+    return 2
```
"""


@pytest.fixture(scope="module")
def rows():
    return {r.id: r for r in BENCHMARK.load_rows(IDS, FIXTURES)}


def test_protocol_splits_and_manifests():
    assert isinstance(BENCHMARK, Benchmark)
    splits = BENCHMARK.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (146, 50, 30)
    assert splits.eval_ids == splits.test
    for name in ("swe_splits.json", "swe_eval_ids.json"):
        if (REFERENCE / name).exists():
            assert (PACKAGE / name).read_bytes() == (REFERENCE / name).read_bytes()


def test_loader_layout_truncation_and_private_fields(rows):
    assert [r.id for r in BENCHMARK.load_rows(IDS, FIXTURES)] == IDS
    row = rows["django__django-13810"]
    assert len(row.task["problem_statement"]) == 16_000 and len(row.task["hints_text"]) == 4_000
    assert row.gold["FAIL_TO_PASS"] == [
        "test_async_and_sync_middleware_chain_async_call (middleware_exceptions.tests.MiddlewareNotUsedTests)"]
    assert row.gold["PASS_TO_PASS"] == []
    for r in rows.values():
        public = json.dumps(r.public())
        assert "adapted_handler" not in public and "regression test" not in public
        assert "FAIL_TO_PASS" not in public and "test_patch" not in public
        text = BENCHMARK.render_task(r)
        assert r.task["repo"] in text and r.task["base_commit"] in text


def test_missing_dir_wrong_layout_missing_id(tmp_path, monkeypatch):
    monkeypatch.delenv("SWE_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="princeton-nlp/SWE-bench_Verified"):
        BENCHMARK.load_rows(IDS)
    with pytest.raises(DataError, match="does not exist"):
        BENCHMARK.load_rows(IDS, tmp_path / "absent")
    with pytest.raises(DataError, match="parquet"):
        BENCHMARK.load_rows(IDS, tmp_path)
    record = json.loads((FIXTURES / "test.jsonl").read_text().splitlines()[0])
    del record["test_patch"]
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(DataError, match="test_patch"):
        BENCHMARK.load_rows(IDS, tmp_path)
    shutil.copy(FIXTURES / "test.jsonl", tmp_path / "test.jsonl")
    with pytest.raises(DataError, match="psf__requests-1142"):
        BENCHMARK.load_rows(["psf__requests-1142"], tmp_path)
    monkeypatch.setenv("SWE_DATA_DIR", str(tmp_path))
    assert BENCHMARK.load_rows(IDS[:1])[0].id == IDS[0]


@pytest.mark.slow
def test_parquet_needs_pyarrow_or_reads_it(tmp_path, rows):
    records = [json.loads(line) for line in (FIXTURES / "test.jsonl").read_text().splitlines()]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1")
        with pytest.raises(DataError, match="pyarrow"):
            BENCHMARK.load_rows(IDS, tmp_path)
        return
    (tmp_path / "data").mkdir()
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "data" / "test-00000-of-00001.parquet")
    assert [r.id for r in BENCHMARK.load_rows(IDS, tmp_path)] == IDS


def test_structural_check():
    ok = check_patch(GOOD)
    assert ok.ok and ok.added == 1 and ok.removed == 1 and ok.files == 1
    assert BENCHMARK.score(None, AgentOutput(text=GOOD)).value == 1.0  # type: ignore[arg-type]
    cases = {
        "no block": ("just change return 1 to return 2", "No fenced diff block"),
        "python block": ("```python\nprint(1)\n```", "No fenced diff block"),
        "no header": ("```diff\n-a\n+b\n```", "Diff has no file header"),
        "no change": ("```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n```", "Diff changes no lines"),
    }
    for name, (text, feedback) in cases.items():
        score = BENCHMARK.score(None, AgentOutput(text=text))  # type: ignore[arg-type]
        assert score.value == 0.0 and feedback in score.feedback, name
        assert score.malformed == (feedback == "No fenced diff block")
    # protocol-v1 §5.7 swe: a header is any of diff --git / --- a/ / +++ b/ / "@@ "; no hunk is required
    for text in ("```diff\n@@ -1 +1 @@\n-a\n+b\n```", "```diff\n--- a/x\n+++ b/x\n-a\n+b\n```"):
        assert BENCHMARK.score(None, AgentOutput(text=text)).value == 1.0  # type: ignore[arg-type]


def test_simulate_and_vote_key(rows):
    for row in rows.values():
        reply = BENCHMARK.simulate(row, None, random.Random(0))
        assert BENCHMARK.score(row, AgentOutput(text=reply.content)).value == 1.0
        key = BENCHMARK.vote_key(row, AgentOutput(text=reply.content))
        assert key and key == BENCHMARK.vote_key(row, AgentOutput(text=reply.content.replace("\n", "  \n")))
        for mode in BENCHMARK.failure_modes:
            score = BENCHMARK.score(row, AgentOutput(text=BENCHMARK.simulate(row, mode.name, random.Random(0)).content))
            assert score.value == 0.0 and re.search(mode.feedback_pattern, score.feedback), mode.name
            assert 0.15 <= mode.rate <= 0.3
    assert BENCHMARK.vote_key(rows[IDS[0]], AgentOutput(text="no patch")) is None
    assert "```diff" in BENCHMARK.contract(1) and BENCHMARK.contract(2) != BENCHMARK.contract(1)


def test_harness_rule_without_docker_is_a_clear_error(rows, monkeypatch):
    monkeypatch.setattr(harness.shutil, "which", lambda name: None)
    with pytest.raises(HarnessUnavailable, match="Docker") as info:
        BENCHMARK.score_runner(rows[IDS[0]], AgentOutput(text=GOOD))
    assert isinstance(info.value, UsageError)
