"""`DatasetBenchmark`: the skeleton every dataset package shares (splits from its package, contracts from a
table); the protocol's optional members come with their defaults from core.benchmark.BenchmarkDefaults."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Mapping

from core.benchmark import BenchmarkDefaults, Splits


class DatasetBenchmark(BenchmarkDefaults):
    """Subclasses set `name`, `scorer_id`, `package_dir` (holding `<name>_splits.json`) and `contracts`
    (contract version -> text)."""

    name: str = ""
    package_dir: ClassVar[Path]
    contracts: ClassVar[Mapping[int, str]] = {}

    def splits(self) -> Splits:
        from benchmarks.splits import load_splits

        return load_splits(self.name, self.package_dir)

    def contract(self, version: int = 1) -> str:
        if version not in self.contracts:
            raise ValueError(f"unknown output contract version {version!r}; known: {sorted(self.contracts)}")
        return self.contracts[version]

