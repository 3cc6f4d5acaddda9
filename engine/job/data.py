"""The data layer of a job: the only way to get rows, and the gate that withholds test rows until a sealed,
verified selection.json exists (enforced here, not by convention)."""

from __future__ import annotations

from pathlib import Path

from core.benchmark import Benchmark, Splits
from core.canonical import content_hash
from core.errors import ArtifactError, SealedSplitError
from core.models import Row
from core.protocol import split_hash
from engine.job.artifacts import read_sealed, write_json_atomic
from engine.job.smoke import smoke_splits


class JobData:
    """`rows_per_split`: a smoke run's first N rows of each split (engine/job/smoke.py), hashed as such."""

    def __init__(self, bench: Benchmark, data_dir: str | None, job_dir: Path, rows_per_split: int | None = None):
        self.bench = bench
        self.data_dir = data_dir
        self.job_dir = job_dir
        splits = bench.splits()
        self.splits: Splits = splits if rows_per_split is None else smoke_splits(splits, rows_per_split)
        self.split_sha256 = split_hash(self.splits.as_hash_payload())
        self._cache: dict[str, list[Row]] = {}

    def record_splits(self) -> None:
        """splits.json: the ordered ids of every split this job reads (the payload job.json's split_sha256 hashes),
        written once, so its card carries what the hash is derived from (engine.cards.derivation)."""
        path = self.job_dir / "splits.json"
        if not path.exists():
            write_json_atomic(path, self.splits.as_hash_payload())

    def _load(self, split: str) -> list[Row]:
        if split not in self._cache:
            self._cache[split] = self.bench.load_rows(list(self.splits.ids(split)), self.data_dir)
        return self._cache[split]

    def train(self) -> list[Row]:
        return self._load("train")

    def validation(self) -> list[Row]:
        return self._load("validation")

    def test(self) -> list[Row]:
        """Test rows, released only after selection.json is sealed, verified and not test-exposed."""
        path = self.job_dir / "selection.json"
        if not path.exists():
            raise SealedSplitError("test rows are sealed: no selection.json exists yet (run final validation first)")
        try:
            selection = read_sealed(path)
        except ArtifactError as exc:
            raise SealedSplitError(f"test rows are sealed: {exc}") from None
        if selection.get("test_exposed") is not False or not selection.get("selection_id"):
            raise SealedSplitError("test rows are sealed: selection.json is not a valid locked selection")
        return self._load("test")

    @staticmethod
    def rows_sha256(rows: list[Row]) -> str:
        return content_hash([r.public() for r in rows])
