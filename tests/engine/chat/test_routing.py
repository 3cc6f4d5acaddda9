"""Cache-aware routing (engine/chat/routing.py): turn k+1 goes where turn k went, new conversations are placed by
their head under a load bound no endpoint exceeds, and an ejected preferred endpoint is passed over at once."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import anyio
import pytest

from core.errors import UsageError
from engine.chat.endpoint import Endpoint, EndpointPool, Timeouts
from engine.chat.routing import SERVED_BY, CacheAware, LeastLoaded, make_router
from tests.conftest import start_sim
from tests.fakebench import FakeBench


@dataclass
class FakeLimiter:
    total_tokens: int
    borrowed_tokens: int = 0


@dataclass
class FakeTarget:
    base_url: str
    limiter: FakeLimiter = field(default_factory=lambda: FakeLimiter(8))


def targets(n: int, limit: int = 8) -> list[FakeTarget]:
    return [FakeTarget(f"http://10.0.0.{i}:8000/v1", FakeLimiter(limit)) for i in range(n)]


def conversation(row: int, turns: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are the solver."}, {"role": "user", "content": f"task {row}"}]
    for t in range(turns):
        messages += [{"role": "assistant", "content": f"step {t} of {row}"}, {"role": "tool", "content": f"r{t}"}]
    return messages


def test_turn_k_plus_1_goes_where_turn_k_went_even_when_others_are_idler():
    router = CacheAware(targets(4))
    first = router.choose({"messages": conversation(7, 0)}, range(4))
    for turn in range(1, 6):
        # load the other endpoints a little (within the bound): affinity still wins
        for i in range(4):
            if i != first:
                router.demand[i] += 1
        assert router.choose({"messages": conversation(7, turn)}, range(4)) == first
    assert router.counts["affinity"] == 5


def test_a_repeated_head_meets_the_same_endpoint_and_different_heads_spread():
    router = CacheAware(targets(4))
    met = set()
    for _ in range(4):  # e.g. the same row and prompt in another job: one cache
        met.add(router.choose({"messages": conversation(3, 0)}, range(4)))
        router.finished(next(iter(met)))
    assert len(met) == 1
    together = CacheAware(targets(4), eps=3.0)  # a loose bound lets a debate's 4 peers, alike, start together
    assert len({together.choose({"messages": conversation(3, 0)}, range(4)) for _ in range(4)}) == 1
    tight = CacheAware(targets(4))  # the default bound (1.25 x the mean) spreads them over the idle endpoints
    assert len({tight.choose({"messages": conversation(3, 0)}, range(4)) for _ in range(4)}) >= 3
    assert max(tight.demand) <= 2
    placed = {router.choose({"messages": conversation(row, 0)}, range(4)) for row in range(40)}
    assert placed == {0, 1, 2, 3}


@pytest.mark.parametrize("eps", [0.1, 0.25, 1.0])
def test_no_endpoint_exceeds_the_load_bound(eps: float):
    rng = random.Random(5)
    router = CacheAware(targets(4, limit=16), eps=eps)
    open_requests: list[int] = []
    for step in range(2000):  # requests come and go at random
        if open_requests and rng.random() < 0.45:
            router.finished(open_requests.pop(rng.randrange(len(open_requests))))
        hot = rng.random() < 0.7  # most requests continue one hot conversation or share one head
        body = {"messages": conversation(0 if hot else rng.randrange(50), rng.randrange(3))}
        index = router.choose(body, range(4))
        open_requests.append(index)
        bound = math.ceil((1 + eps) * sum(router.demand) / 4)  # (1 + eps) x the mean demand, this one included
        assert router.demand[index] <= bound, (step, router.demand)  # enforced where each request is placed
    assert router.counts["affinity"] and router.counts["placed"]


def test_a_full_preferred_endpoint_yields_to_a_free_one():
    router = CacheAware(targets(2, limit=2), eps=10.0)
    first = router.choose({"messages": conversation(1, 0)}, range(2))
    router.choose({"messages": conversation(1, 1)}, range(2))  # affinity: the same endpoint, now full
    assert router.choose({"messages": conversation(1, 2)}, range(2)) == 1 - first
    router.choose({"messages": conversation(2, 0)}, range(2))  # both full now: the load bound alone decides
    assert router.demand == [2, 2]


def test_an_unusable_preferred_endpoint_is_passed_over_at_once():
    router = CacheAware(targets(3))
    first = router.choose({"messages": conversation(4, 0)}, range(3))
    usable = [i for i in range(3) if i != first]
    assert router.choose({"messages": conversation(4, 1)}, usable) in usable


def test_routing_names_and_defaults():
    assert make_router(None, targets(1)).name == "least-loaded"
    assert make_router(None, targets(2)).name == "cache-aware"
    assert isinstance(make_router("least-loaded", targets(3)), LeastLoaded)
    with pytest.raises(UsageError, match="unknown routing 'nearest'"):
        make_router("nearest", targets(2))
    with pytest.raises(UsageError, match="eps > 0"):
        CacheAware(targets(2), eps=0)


def test_an_ejected_preferred_endpoint_falls_back_at_once():
    """Turn 1 is served by endpoint e; e is ejected; turn 2 goes to the other endpoint on its first send, with no
    request to e and no outage wait."""
    servers = [start_sim(FakeBench()), start_sim(FakeBench())]

    async def main() -> tuple[int | None, int | None, EndpointPool, int]:
        pool = EndpointPool([Endpoint(s.base_url, "test-model", capacity=4, timeouts=Timeouts(read=10))
                             for s in servers], probe_interval=60.0)
        try:
            turn1 = conversation(9, 0)
            await pool.chat({"model": "test-model", "messages": turn1, "seed": 1})
            first = SERVED_BY.get()
            assert first is not None
            pool.health[first].healthy = False  # ejected
            sent_before = pool.endpoints[first].sent
            await pool.chat({"model": "test-model", "messages": conversation(9, 1), "seed": 2})
            return first, SERVED_BY.get(), pool, pool.endpoints[first].sent - sent_before
        finally:
            await pool.aclose()

    try:
        first, second, pool, sent_to_ejected = anyio.run(main)
    finally:
        for s in servers:
            s.stop()
    assert second == 1 - first and sent_to_ejected == 0
    assert pool.stats["requests_sent"] == 2 and "outage_seconds" not in pool.stats and pool._outage_since is None
    assert pool.summary()["routing"] == "cache-aware"


def test_the_routing_option_sets_the_default_of_pools_built_under_it():
    """`--routing` of `job` and `sweep run` (engine/chat/routing.py `default_routing`): pools built inside the block
    without a routing of their own use it, recorded in the pool summary; outside it the default rule holds again."""
    from engine.chat.routing import check_routing, default_routing

    def pool(n: int) -> EndpointPool:
        return EndpointPool([Endpoint(f"http://10.0.0.{i}:8000/v1", "m", capacity=4, timeouts=Timeouts(read=10))
                             for i in range(n)], probe_interval=60.0)

    with default_routing("least-loaded"):
        assert pool(2).summary()["routing"] == "least-loaded"
        assert pool(2).router.name == "least-loaded"
        own = EndpointPool(pool(2).endpoints, routing="cache-aware", probe_interval=60.0)
        assert own.router.name == "cache-aware"
    with default_routing(None):
        assert pool(2).router.name == "cache-aware" and pool(1).router.name == "least-loaded"
    assert pool(2).summary()["routing"] == "cache-aware"
    with default_routing("cache-aware"):
        assert pool(1).router.name == "cache-aware"
    with pytest.raises(UsageError, match="--routing must be one of"):
        check_routing("nearest")


@pytest.mark.parametrize("command", [("job",), ("sweep", "run")])
def test_a_bad_routing_value_is_one_line_and_exit_2(command):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run([sys.executable, "-m", "engine", *command, "--routing", "nearest"], capture_output=True,
                          text=True, cwd=root, timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--routing must be one of" in lines[0] and "nearest" in lines[0], proc.stderr
