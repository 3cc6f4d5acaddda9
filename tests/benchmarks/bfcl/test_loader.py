"""Loader: protocol (v3) IDs onto the bfcl-eval v4 files, private fields kept out of `task`, clear errors."""

from __future__ import annotations

import json
import shutil

import pytest

from benchmarks.bfcl import data
from core.errors import DataError
from tests.benchmarks.bfcl.helpers import FIXTURE_IDS, FIXTURES, raw_entries


def test_protocol_ids_map_to_v4_rows(rows):
    assert set(rows) == set(FIXTURE_IDS)
    for protocol_id, source_id in FIXTURE_IDS.items():
        file_category = data.parse_id(protocol_id).file_category
        raw = raw_entries(file_category)[source_id]
        answer = raw_entries(file_category, answers=True)[source_id]
        row = rows[protocol_id]
        assert row.dataset == "bfcl"
        assert row.task["functions"] == raw["function"]
        assert row.task["question"] == raw["question"][0]
        assert row.gold == {"ground_truth": answer["ground_truth"]}


def test_parse_id_categories():
    assert data.parse_id("simple_12").source_id == "simple_python_12"
    assert data.parse_id("parallel_multiple_7").category == "parallel_multiple"
    assert data.parse_id("parallel_multiple_7").source_id == "parallel_multiple_7"
    assert data.parse_id("parallel_3").category == "parallel"
    assert data.parse_id("multiple_0").file_category == "multiple"
    with pytest.raises(DataError, match="not a BFCL protocol ID"):
        data.parse_id("simple_python_3")
    with pytest.raises(DataError):
        data.parse_id("live_simple_1")


def test_rows_come_back_in_requested_order(bench):
    ids = ["parallel_1", "simple_2", "multiple_0", "parallel_multiple_2", "simple_0"]
    assert [row.id for row in bench.load_rows(ids, data_dir=str(FIXTURES))] == ids


def test_category_in_task_and_private_fields_stripped(rows):
    assert rows["simple_0"].task["category"] == "simple"
    assert rows["parallel_multiple_0"].task["category"] == "parallel_multiple"
    for row in rows.values():
        assert set(row.task) == {"question", "functions", "category"}
        public = json.dumps(row.public())
        assert "ground_truth" not in public
        assert "ground_truth" not in row.public()["task"]


def test_render_task_reads_only_the_task(bench, rows):
    row = rows["multiple_0"]
    text = bench.render_task(row)
    assert text.startswith("Book a table for 4 at Luigi's tonight at 7pm.")
    assert "Available functions:" in text
    assert "- restaurant.book: Book a table at a restaurant." in text
    assert "    - party_size (integer, required): Number of people." in text
    assert "notes (string, optional)" in text
    stripped = row.model_copy(update={"gold": {}})
    assert bench.render_task(stripped) == text


def test_missing_file_names_the_file(tmp_path, bench):
    shutil.copy(FIXTURES / "BFCL_v4_multiple.json", tmp_path / "BFCL_v4_multiple.json")
    with pytest.raises(DataError, match=r"BFCL_v4_multiple\.json") as info:
        bench.load_rows(["multiple_0"], data_dir=str(tmp_path))
    assert "possible_answer" in str(info.value)
    assert "pip install --no-deps bfcl-eval==" in str(info.value)
    with pytest.raises(DataError, match=r"BFCL_v4_simple_python\.json"):
        bench.load_rows(["simple_0"], data_dir=str(tmp_path))


def test_unknown_id_is_named(bench):
    with pytest.raises(DataError, match="parallel_99") as info:
        bench.load_rows(["parallel_0", "parallel_99"], data_dir=str(FIXTURES))
    assert "1 requested ID" in str(info.value)


def test_id_with_question_but_no_answer_is_refused(tmp_path, bench):
    shutil.copytree(FIXTURES, tmp_path / "data")
    answers = tmp_path / "data" / "possible_answer" / "BFCL_v4_parallel.json"
    lines = answers.read_text().splitlines()
    answers.write_text("\n".join(line for line in lines if '"parallel_2"' not in line) + "\n")
    with pytest.raises(DataError, match="parallel_2"):
        bench.load_rows(["parallel_2"], data_dir=str(tmp_path / "data"))


def test_data_dir_from_environment(monkeypatch, bench):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(FIXTURES))
    assert [row.id for row in bench.load_rows(["simple_1"])] == ["simple_1"]


def test_splits_are_the_reference_manifests(bench):
    splits = bench.splits()
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (150, 50, 100)
    assert splits.eval_ids == splits.test
    assert splits.dataset == "bfcl"
    counts = {c: sum(1 for i in splits.test if data.parse_id(i).category == c) for c in data.CATEGORIES}
    assert counts == {"simple": 40, "multiple": 20, "parallel": 20, "parallel_multiple": 20}
