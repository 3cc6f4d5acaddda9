"""Load a dataset's fixed split manifests (protocol-v1 section 5.1) and check them.

    <package_dir>/<ds>_splits.json     dataset, source, split_seed, counts, note, train, validation, test
    <package_dir>/<ds>_eval_ids.json   optional: dataset, sample, n, source, ids (must equal `test`, same order)

Where no eval manifest exists, the `test` list is the evaluation-ID set (the protocol says so).
Every inconsistency raises core.errors.DataError with a one-line message naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.benchmark import Splits
from core.errors import DataError

SPLIT_NAMES = ("train", "validation", "test")


def load_splits(dataset: str, package_dir: Path) -> Splits:
    """The checked `Splits` of `dataset` from `<package_dir>/<dataset>_splits.json` (+ `_eval_ids.json`)."""
    package_dir = Path(package_dir)
    splits_path = package_dir / f"{dataset}_splits.json"
    data = _read_json(splits_path)
    if data.get("dataset") != dataset:
        raise DataError(f"{splits_path.name}: dataset is {data.get('dataset')!r}, expected {dataset!r}")

    lists: dict[str, tuple[str, ...]] = {}
    counts = data.get("counts")
    if not isinstance(counts, dict):
        raise DataError(f"{splits_path.name}: missing 'counts' object")
    for split in SPLIT_NAMES:
        ids = _id_list(data.get(split), f"{splits_path.name}: {split}")
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise DataError(f"{splits_path.name}: duplicate IDs in {split}: {', '.join(duplicates[:5])}")
        if counts.get(split) != len(ids):
            raise DataError(f"{splits_path.name}: {split} has {len(ids)} IDs but counts.{split} = {counts.get(split)}")
        lists[split] = tuple(ids)

    for i, first in enumerate(SPLIT_NAMES):
        for second in SPLIT_NAMES[i + 1:]:
            shared = sorted(set(lists[first]) & set(lists[second]))
            if shared:
                raise DataError(
                    f"{splits_path.name}: {first} and {second} overlap in {len(shared)} IDs: {', '.join(shared[:5])}"
                )

    eval_ids = lists["test"]
    eval_path = package_dir / f"{dataset}_eval_ids.json"
    if eval_path.exists():
        manifest = _read_json(eval_path)
        if manifest.get("dataset") != dataset:
            raise DataError(f"{eval_path.name}: dataset is {manifest.get('dataset')!r}, expected {dataset!r}")
        eval_ids = tuple(_id_list(manifest.get("ids"), f"{eval_path.name}: ids"))
        if "n" in manifest and manifest["n"] != len(eval_ids):
            raise DataError(f"{eval_path.name}: has {len(eval_ids)} IDs but n = {manifest['n']}")
        if eval_ids != lists["test"]:
            raise DataError(
                f"{eval_path.name}: ids differ from the test list of {splits_path.name} (same order required)"
            )

    return Splits(
        dataset=dataset,
        train=lists["train"],
        validation=lists["validation"],
        test=lists["test"],
        eval_ids=eval_ids,
        source=str(data.get("source", "")),
    )


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DataError(f"split manifest not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{path.name}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path.name}: top level is not a JSON object")
    return data


def _id_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DataError(f"{where} is not a list of string IDs")
    return value
