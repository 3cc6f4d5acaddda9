"""An attempt that fails before its first model call (agent code raising, contained as an infrastructure failure)
leaves no event; the runner's failure mutation naming the attempt is its record, so the card validates clean, and
a claim of more attempts than were recorded is still caught."""

from __future__ import annotations

from engine.cards.export import export_card
from engine.cards.validate import validate_path
from tests.conftest import start_sim
from tests.engine.cards.cardutil import lines
from tests.engine.cards.test_forgery import edit_annotation, forged
from tests.engine.jobutil import run
from tests.fakebench import FakeBench


class _BrokenRow(FakeBench):
    """Once armed, rendering test row q40 always raises: every attempt fails before any model call."""

    armed = False

    def render_task(self, row):  # type: ignore[no-untyped-def]
        if self.armed and row.id == "q40":
            raise RuntimeError("always broken row")
        return super().render_task(row)


def test_attempts_that_failed_before_any_call_validate(tmp_path):
    bench = _BrokenRow(n_train=12, n_validation=20, n_test=30)
    server = start_sim(bench, delay_s=0.0)
    bench.armed = True
    try:
        result = run(tmp_path / "job", server.base_url, bench)
    finally:
        server.stop()
    assert result["test"]["failure_counts"]["baseline"]["infrastructure_failures"] == 1
    bundle = export_card(tmp_path / "job", tmp_path / "card")
    broken = [a for a in lines(bundle, "annotations") if a["namespace"] == "mpb.rollout"
              and a["target_id"].startswith("test/q40/")]
    assert broken and all(a["payload"]["attempts"] == 3 for a in broken)
    assert not [e for e in lines(bundle, "events") if e["node_id"].startswith("test/q40/")]  # no call was made
    assert validate_path(tmp_path / "card") == []


def test_a_claim_beyond_the_recorded_attempts_is_still_caught(tmp_path):
    bench = _BrokenRow(n_train=12, n_validation=20, n_test=30)
    server = start_sim(bench, delay_s=0.0)
    bench.armed = True
    try:
        run(tmp_path / "job", server.base_url, bench)
    finally:
        server.stop()
    bundle = export_card(tmp_path / "job", tmp_path / "card")
    target = next(a["target_id"] for a in lines(bundle, "annotations") if a["namespace"] == "mpb.rollout"
                  and a["target_id"].startswith("test/q40/"))
    edit_annotation(bundle, target, "mpb.rollout", lambda p: p.update(attempts=4))  # one more than recorded
    assert "E_ATTEMPT_MISSING" in forged(bundle, "E_ATTEMPT_MISSING")
