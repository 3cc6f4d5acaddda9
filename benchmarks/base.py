"""`DatasetBenchmark`: the skeleton every dataset package shares (splits from its package, contracts from a
table, the data directory from an argument or an environment variable); the protocol's optional members come
with their defaults from core.benchmark.BenchmarkDefaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Mapping

from core.benchmark import BenchmarkDefaults, Splits
from core.errors import DataError


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



def given_path(data_dir: str | None, env_var: str, what: str, where_to_get: str) -> Path:
    """`data_dir`, else the environment variable `env_var`; DataError naming `what` when neither is set."""
    raw = data_dir or os.environ.get(env_var)
    if not raw:
        raise DataError(f"{what} not given: {where_to_get}")
    return Path(raw).expanduser()


def data_directory(data_dir: str | None, env_var: str, what: str, where_to_get: str) -> Path:
    """The dataset directory (see `given_path`); DataError when it does not exist."""
    directory = given_path(data_dir, env_var, what, where_to_get)
    if not directory.is_dir():
        raise DataError(f"{what} {directory} does not exist: {where_to_get}")
    return directory
