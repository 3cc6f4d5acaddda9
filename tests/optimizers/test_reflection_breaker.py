"""Issue W item 4: a reflection endpoint that keeps failing stops the method with its own stop reason and an
infrastructure-invalid (healable) optimization, visibly, without charging rollouts for proposals it cannot make;
a reported max_model_len fits the prompt to the context."""

from __future__ import annotations

import json

import pytest

from core.errors import EndpointStatusError, InfrastructureError, ReflectionUnavailableError
from engine.cards.bundle import Bundle
from engine.cards.export import export_card
from engine.cards.validate import validate_bundle
from engine.job.recovery import unfinished
from engine.reflection import BREAKER_AFTER, ReflectionClient
from engine.reflection_fit import estimate_tokens
from engine.runner import RetryPolicy
from engine.sim.faults import FaultPlan, ScheduledFault
from engine.store import Store
from tests.conftest import start_sim
from tests.fakebench import FakeBench
from tests.optimizers.optjob import REFLECTION_MODEL, read, run

K = BREAKER_AFTER


class Scripted:
    """A ChatEndpoint answering from a script: a string is a reply's text, an exception is raised."""

    model_id = "scripted-reflection"

    def __init__(self, script, max_model_len=None):
        self.script, self.bodies, self.max_model_len = list(script), [], max_model_len

    async def chat(self, body, encoded=None):
        self.bodies.append(body)
        step = self.script.pop(0) if self.script else "```\nok\n```"
        if isinstance(step, BaseException):
            raise step
        return {"content": step, "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}, 0.0


async def _client(store, endpoint, component="reflection"):
    await store.add_node(node_id="run/cell", parent_id=None, instance_key="cell", task_key="job", status="running",
                         worker_key=None, level=0, actor="test")
    return ReflectionClient(endpoint=endpoint, store=store, run_node="run/cell", cell_id="cell", optimizer_seed=1,
                            retry=RetryPolicy(base_delay=0.0), component=component)


def _500():
    return EndpointStatusError("HTTP 500: boom", status_code=500)


@pytest.mark.anyio
async def test_the_breaker_trips_on_k_consecutive_failures_and_a_usable_reply_resets_it(tmp_path):
    # interleaved: fail, fail, ok, empty, fail, ok ... never K in a row -> never trips
    attempts = 3  # an infrastructure error is retried (1 + 2 attempts) before it counts once
    script = [_500()] * attempts * 2 + ["```\na\n```", "  "] + [_500()] * attempts + ["```\nb\n```"]
    async with Store(tmp_path / "a.sqlite", run_id="cell") as store:
        client = await _client(store, Scripted(script))
        outcomes = []
        for i in range(6):
            try:
                outcomes.append(await client.propose(f"p{i}", purpose="t", key=str(i)))
            except InfrastructureError as exc:
                outcomes.append(type(exc).__name__)
        assert outcomes == ["EndpointStatusError", "EndpointStatusError", "```\na\n```", "  ",
                            "EndpointStatusError", "```\nb\n```"]
        assert client.failures() == {"empty_text": 1, "http_status": 3}
    # consecutive: K failures of any kinds in a row trip it; the K-th raises, later calls raise without sending
    endpoint = Scripted([_500()] * attempts + [""] + [_500()] * attempts)
    async with Store(tmp_path / "b.sqlite", run_id="cell") as store:
        client = await _client(store, endpoint)
        with pytest.raises(InfrastructureError):
            await client.propose("p0", purpose="t", key="0")
        assert await client.propose("p1", purpose="t", key="1") == ""
        with pytest.raises(ReflectionUnavailableError) as tripped:
            await client.propose("p2", purpose="t", key="2")
        assert not isinstance(tripped.value, InfrastructureError)  # the methods' except does not swallow it
        assert tripped.value.stop_reason == "reflection_unavailable" and tripped.value.consecutive == K
        sent = len(endpoint.bodies)
        with pytest.raises(ReflectionUnavailableError):
            await client.propose("p3", purpose="t", key="3")
        assert len(endpoint.bodies) == sent
        assert client.usage()["failures"] == {"empty_text": 1, "http_status": 2}


@pytest.mark.anyio
async def test_a_judge_empty_reply_is_its_answer_not_a_failure(tmp_path):
    async with Store(tmp_path / "j.sqlite", run_id="cell") as store:
        client = await _client(store, Scripted([""] * (K + 1)), component="judge")
        for i in range(K + 1):
            assert await client.complete([{"role": "user", "content": f"j{i}"}], purpose="t", key=str(i)) == ""
        assert client.failures() == {}


@pytest.mark.anyio
async def test_a_reported_max_model_len_fits_the_prompt_and_none_leaves_the_body_unchanged(tmp_path):
    long = "Instruction.\n\n" + "x" * 40_000 + "\n\nFeedback: wrong.\n\n" + "y" * 3_000
    messages = [{"role": "user", "content": long}]
    async with Store(tmp_path / "f.sqlite", run_id="cell") as store:
        plain = Scripted([])
        client = await _client(store, plain)
        await client.propose(long, purpose="t", key="a")
        expected = {**client.body_for(messages), "seed": plain.bodies[0]["seed"]}
        assert plain.bodies[0] == expected  # no max_model_len: sent exactly as built (recorded keys unchanged)
        assert client.trimmed_calls == 0
    async with Store(tmp_path / "g.sqlite", run_id="cell") as store:
        small = Scripted([], max_model_len=8192)
        client = await _client(store, small)
        await client.propose(long, purpose="t", key="a")
        (body,) = small.bodies
        sent = body["messages"][0]["content"]
        assert estimate_tokens(body["messages"]) + body["max_tokens"] <= 8192 and body["max_tokens"] >= 1024
        assert sent.startswith("Instruction.") and "Feedback: wrong." in sent and "y" * 3_000 in sent
        assert "characters cut to fit" in sent and len(sent) < len(long)  # the longest block was cut head+tail
        assert client.trimmed_calls == 1
    async with Store(tmp_path / "h.sqlite", run_id="cell") as store:
        roomy = Scripted([], max_model_len=200_000)  # fits: unchanged
        client = await _client(store, roomy)
        await client.propose(long, purpose="t", key="b")
        assert roomy.bodies[0]["messages"] == messages and roomy.bodies[0]["max_tokens"] == 48000
    async with Store(tmp_path / "i.sqlite", run_id="cell") as store:
        tiny = Scripted([], max_model_len=600)  # cannot leave the floor even cut: not sent, counted
        client = await _client(store, tiny)
        with pytest.raises(InfrastructureError, match="context length"):
            await client.propose(long, purpose="t", key="c")
        assert tiny.bodies == [] and client.failures() == {"context_length_exceeded": 1}


def test_the_start_up_check_records_a_reported_max_model_len(tmp_path):
    import anyio

    from engine.chat.preflight import Target, max_model_len

    server = start_sim(FakeBench(), max_model_len=4096)
    plain = start_sim(FakeBench())
    try:
        assert anyio.run(max_model_len, Target(server.base_url, REFLECTION_MODEL, None)) == 4096
        assert anyio.run(max_model_len, Target(plain.base_url, REFLECTION_MODEL, None)) is None
    finally:
        server.stop()
        plain.stop()


# --------------------------------------------------------------------------- jobs over a failing reflection endpoint
FAULTS = {"context_overflow": "context_length_exceeded", "http_500": "http_status", "empty_content": "empty_text"}
VALIDATION_ROWS = 20  # tests.optimizers.optjob.bench()
TRAIN_ROWS = 12
# what a method charges before its K-th failed reflection call stops it (the bound the docstring states):
# GEPA: the seed's validation, then one 3-row parent minibatch per iteration, K iterations reach reflection (an
# iteration on a perfect minibatch does not reflect, the sim's seed scores below 1 on these rows);
# MASPO: per search node its parent on a 10-row minibatch, then two offspring proposals (one reflection call each,
# concurrent); no offspring runs without a proposal, so K failed calls are reached within ceil(K / 2) nodes.
BOUND = {"gepa": VALIDATION_ROWS + 3 * K, "maspo": 10 * -(-K // 2)}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["gepa", "maspo"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_failing_reflection_endpoint_stops_the_method_visibly(tmp_path, capsys, method, fault):
    kind = FAULTS[fault]
    server = start_sim(FakeBench(n_train=TRAIN_ROWS, n_validation=VALIDATION_ROWS, n_test=30),
                       faults=FaultPlan(schedule=[ScheduledFault(fault, model=REFLECTION_MODEL)]))
    out = tmp_path / "job"
    try:
        result = run(out, server.base_url, method=method, budget=80, allow_small_budget=True,
                     allow_any_cell=method != "gepa")  # Single is off-grid for maspo
    finally:
        server.stop()
    opt = read(out, "optimization.json")
    assert opt["stop_reason"] == "reflection_unavailable"
    assert opt["status"] == "failed" and opt["failure_kind"] == "infrastructure_invalid"
    assert opt["incumbent_bundle"] == opt["seed_bundle"]
    failures = opt["usage"]["reflection"]["failures"]
    assert set(failures) == {kind} and failures[kind] >= K
    assert opt["budget"]["charged"] <= BOUND[method], opt["budget"]
    assert result["optimization"]["stop_reason"] == "reflection_unavailable"
    reasons, _ = unfinished(out)  # degraded: a later run (the sweep's heal) recovers it
    assert "optimization ended infrastructure_invalid" in reasons
    err = capsys.readouterr().err
    assert "warning: reflection unavailable" in err and kind in err and "heal" in err
    manifest = json.loads(export_card(out, tmp_path / "card").files["manifest.json"])
    card_opt = manifest["run"]["optimization"]
    assert card_opt["stop_reason"] == "reflection_unavailable"
    assert card_opt["model_call_failures"] == {"reflection": failures}
    assert validate_bundle(Bundle.load(tmp_path / "card")) == []


@pytest.mark.slow
def test_a_job_stopped_by_the_breaker_heals_when_the_endpoint_answers(tmp_path):
    """A re-run replays what was recorded, sends the failed reflection calls again, and goes on."""
    out = tmp_path / "job"
    broken = start_sim(FakeBench(n_train=TRAIN_ROWS, n_validation=VALIDATION_ROWS, n_test=30),
                       faults=FaultPlan(schedule=[ScheduledFault("http_500", model=REFLECTION_MODEL)]))
    try:
        run(out, broken.base_url, method="gepa", budget=80, allow_small_budget=True)
    finally:
        broken.stop()
    assert read(out, "optimization.json")["stop_reason"] == "reflection_unavailable"
    served = set(broken.keys_served_ok())
    healthy = start_sim(FakeBench(n_train=TRAIN_ROWS, n_validation=VALIDATION_ROWS, n_test=30))
    try:
        run(out, healthy.base_url, method="gepa", budget=80, allow_small_budget=True)
    finally:
        healthy.stop()
    opt = read(out, "optimization.json")
    assert opt["status"] == "completed" and opt["stop_reason"] != "reflection_unavailable"
    assert "failures" not in opt["usage"]["reflection"]
    assert unfinished(out) == ([], [])
    # what was answered before the stop is replayed, not sent again; the failed reflection calls are sent again
    resent = [e for e in healthy.log if e["key"] in served]
    assert served and resent == []
    first_failed = next(e["key"] for e in broken.log if e["model"] == REFLECTION_MODEL)
    assert first_failed in {e["key"] for e in healthy.log}
    # and the healed optimization is the one an uninterrupted healthy run seals
    clean = start_sim(FakeBench(n_train=TRAIN_ROWS, n_validation=VALIDATION_ROWS, n_test=30))
    try:
        run(tmp_path / "clean", clean.base_url, method="gepa", budget=80, allow_small_budget=True)
    finally:
        clean.stop()
    expected = read(tmp_path / "clean", "optimization.json")
    for field in ("incumbent_bundle", "stop_reason", "budget", "failure_counts"):
        assert opt[field] == expected[field], field
