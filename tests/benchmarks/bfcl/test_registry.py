"""benchmarks.registry: lazy lookup by name."""

from __future__ import annotations

import pytest

from benchmarks import registry
from core.benchmark import Benchmark
from core.errors import UsageError


def test_bfcl_is_registered():
    bench = registry.get_benchmark("bfcl")
    assert isinstance(bench, Benchmark) and bench.name == "bfcl"
    assert "bfcl" in registry.KNOWN_BENCHMARKS


def test_unknown_name_lists_known_names():
    with pytest.raises(UsageError, match="unknown benchmark 'nope'.*gpqa.*toolhop"):
        registry.get_benchmark("nope")


def test_not_yet_implemented_package(monkeypatch):
    def missing(name):
        err = ModuleNotFoundError(f"No module named {name!r}")
        err.name = name
        raise err

    monkeypatch.setattr(registry.importlib, "import_module", missing)
    with pytest.raises(UsageError, match="'gpqa' is not implemented yet"):
        registry.get_benchmark("gpqa")
