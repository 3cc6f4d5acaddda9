"""Property: any store written through Store's methods exports to a valid card whose rows re-import equal."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import pytest

from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from tests.engine.cards.cardutil import StoreSpec, build_store, bundle_rows, card_form, store_rows

pytestmark = pytest.mark.slow  # long-running: left out of the fast loop (-m "not slow")

KEYS = st.sampled_from(["a", "b", "text", "value", "items", "note"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=20),
                    st.floats(allow_nan=False, allow_infinity=False, width=32))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)


@st.composite
def payloads(draw: st.DrawFn) -> dict[str, Any]:
    payload = draw(st.dictionaries(KEYS, JSON, max_size=4))
    if draw(st.integers(0, 9)) == 0:  # now and then a value past the 64 KB inline cap
        payload["big"] = draw(st.integers(0, 2))  # expanded to a 66,000-character string by build_store
    return payload


@st.composite
def specs(draw: st.DrawFn) -> StoreSpec:
    n = draw(st.integers(1, 7))
    parents: list[int | None] = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=6)) if pairs else []
    # the root's status is the run's (run_status below): a run ends after its nodes, as the engine does
    statuses = draw(st.lists(st.tuples(st.integers(1, n - 1), st.sampled_from(
        ["running", "completed", "failed", "cancelled", "skipped", "pending"])), max_size=5)) if n > 1 else []
    events = draw(st.lists(st.tuples(st.integers(0, 2), st.integers(0, n - 1), payloads()), max_size=6))
    annotations = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(["ns.a", "ns.b", "x.y.z"]),
                                          payloads()), max_size=6))
    run_status = draw(st.sampled_from(["completed", "failed", None]))
    return StoreSpec(parents=parents, edges=edges, statuses=statuses, events=events, annotations=annotations,
                     run_status=run_status)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=specs())
def test_store_export_validate_reimport(spec):
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        build_store(run_dir / "card.sqlite", spec)
        export_card(run_dir, run_dir / "card")
        bundle = Bundle.load(run_dir / "card")
        problems = [p for p in validate_bundle(bundle) if p.code != "W_RUN_NOT_TERMINAL"]
        assert problems == []
        assert bundle_rows(bundle) == card_form(store_rows(run_dir / "card.sqlite"))
        big = any("big" in p for _, _, p in spec.events) or any("big" in p for _, _, p in spec.annotations)
        assert any(n.startswith("blobs/") for n in bundle.files) == big
        for data in bundle.files.values():
            assert b"[truncated]" not in data
