"""engine.store.utc_now formats the seconds part once per second: its text must equal datetime's ISO 8601 form
(milliseconds truncated, Z) at every instant, across second boundaries and in any order of calls."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

import engine.store.clock as store_module
from engine.store import utc_now

INSTANTS = [0.0, 0.0009, 0.999, 1.0, 59.9995, 86399.999, 1764620446.435, 1764620446.4359, 1764620447.0001,
            1764620446.9999, 4102444799.999]


def _reference(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize("order", [INSTANTS, INSTANTS[::-1]])
def test_utc_now_equals_the_datetime_form(monkeypatch: pytest.MonkeyPatch, order: list[float]):
    for t in order:
        monkeypatch.setattr(store_module.time, "time", lambda t=t: t)
        assert utc_now() == _reference(t)


def test_utc_now_is_the_current_time():
    before = datetime.now(timezone.utc).replace(microsecond=0)
    parsed = datetime.fromisoformat(utc_now().replace("Z", "+00:00"))
    assert before <= parsed <= datetime.now(timezone.utc)
    assert time.time() - parsed.timestamp() < 5
