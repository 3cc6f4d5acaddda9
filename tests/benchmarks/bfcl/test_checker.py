"""The slim import of the official checker: a one-line DataError with the install line when it is missing."""

from __future__ import annotations

import importlib.util

import pytest

from benchmarks.bfcl import checker, data
from core.errors import DataError
from tests.benchmarks.bfcl.helpers import FIXTURES


def _hide_bfcl_eval(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        if name == "bfcl_eval" or name.startswith("bfcl_eval."):
            return None
        return real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(checker, "_loaded", None)
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)


def test_missing_checker_says_how_to_install(monkeypatch):
    _hide_bfcl_eval(monkeypatch)
    with pytest.raises(DataError) as info:
        checker.ensure_checker()
    message = str(info.value)
    assert "pip install --no-deps bfcl-eval==" in message and "\n" not in message


def test_missing_data_says_how_to_install(monkeypatch, bench):
    _hide_bfcl_eval(monkeypatch)
    with pytest.raises(DataError, match=r"pip install --no-deps bfcl-eval==.*BFCL_DATA_DIR"):
        bench.load_rows(["simple_0"])
    # an explicit data directory needs no package
    assert bench.load_rows(["simple_0"], data_dir=str(FIXTURES))[0].id == "simple_0"


def test_install_hint_pins_a_version():
    assert checker.INSTALL_HINT == f"pip install --no-deps bfcl-eval=={checker.PINNED_VERSION}"
