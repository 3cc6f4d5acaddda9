"""benchmarks.splits.load_splits: the shared loader of <ds>_splits.json / <ds>_eval_ids.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.splits import load_splits
from core.errors import DataError


def write(directory: Path, train, validation, test, eval_ids=None, counts=None, dataset="toy") -> Path:
    counts = counts or {"train": len(train), "validation": len(validation), "test": len(test)}
    splits = {"dataset": dataset, "source": "unit", "split_seed": 0, "counts": counts, "note": "",
              "train": train, "validation": validation, "test": test}
    (directory / "toy_splits.json").write_text(json.dumps(splits))
    if eval_ids is not None:
        manifest = {"dataset": dataset, "sample": "all", "n": len(eval_ids), "source": "unit", "ids": eval_ids}
        (directory / "toy_eval_ids.json").write_text(json.dumps(manifest))
    return directory


def test_valid_manifests(tmp_path):
    splits = load_splits("toy", write(tmp_path, ["a", "b"], ["c"], ["d", "e"], eval_ids=["d", "e"]))
    assert (splits.train, splits.validation, splits.test, splits.eval_ids) == (("a", "b"), ("c",), ("d", "e"), ("d", "e"))
    assert splits.source == "unit" and splits.dataset == "toy"


def test_eval_ids_default_to_test(tmp_path):
    assert load_splits("toy", write(tmp_path, ["a"], ["b"], ["c", "d"])).eval_ids == ("c", "d")


def test_overlap_refused(tmp_path):
    with pytest.raises(DataError, match="train and test overlap in 1 IDs: b"):
        load_splits("toy", write(tmp_path, ["a", "b"], ["c"], ["b"]))


def test_duplicate_refused(tmp_path):
    with pytest.raises(DataError, match="duplicate IDs in validation: c"):
        load_splits("toy", write(tmp_path, ["a"], ["c", "c"], ["d"], counts={"train": 1, "validation": 2, "test": 1}))


def test_counts_mismatch_refused(tmp_path):
    with pytest.raises(DataError, match=r"test has 1 IDs but counts.test = 2"):
        load_splits("toy", write(tmp_path, ["a"], ["b"], ["c"], counts={"train": 1, "validation": 1, "test": 2}))


def test_eval_ids_must_equal_test_in_order(tmp_path):
    with pytest.raises(DataError, match="toy_eval_ids.json: ids differ"):
        load_splits("toy", write(tmp_path, ["a"], ["b"], ["c", "d"], eval_ids=["d", "c"]))


def test_wrong_dataset_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="split manifest not found"):
        load_splits("toy", tmp_path)
    with pytest.raises(DataError, match="dataset is 'other'"):
        load_splits("toy", write(tmp_path, ["a"], ["b"], ["c"], dataset="other"))


def test_messages_are_one_line(tmp_path):
    (tmp_path / "toy_splits.json").write_text("{not json")
    with pytest.raises(DataError) as info:
        load_splits("toy", tmp_path)
    assert "\n" not in str(info.value)


def test_every_shipped_manifest_loads():
    root = Path(__file__).resolve().parents[2] / "benchmarks"
    shipped = sorted(root.glob("*/*_splits.json"))
    assert shipped
    for path in shipped:
        dataset = path.name[: -len("_splits.json")]
        load_splits(dataset, path.parent)
