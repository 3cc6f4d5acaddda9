"""The simulated endpoint's prefix cache (engine/sim/prefix_cache.py): a repeated prefix is a hit, a conversation's
next turn finds its previous turn (reply included), the LRU evicts at capacity, and the server reports it in the
response usage and at GET /v1/prefix_cache. Off by default: responses stay byte-identical."""

from __future__ import annotations

import json
import urllib.request

from engine.sim.prefix_cache import BLOCK_CHARS, BLOCK_TOKENS, PrefixCache
from engine.sim.request_text import all_text
from engine.sim.server import SimServer
from tests.conftest import make_policy
from tests.fakebench import FakeBench

SYSTEM = "s" * (10 * BLOCK_CHARS)  # exactly 10 blocks


def reply(text: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1}}


def serve(cache: PrefixCache, messages: list[dict], answer: str = "ok") -> int:
    found = cache.lookup(messages)
    rendered = reply(answer)
    rendered["usage"]["prompt_tokens"] = len(all_text(messages)) // 4
    cache.answered(found, rendered)
    return int(rendered["usage"]["prompt_tokens_details"]["cached_tokens"])


def test_a_repeated_prefix_hits_and_only_full_blocks_count():
    cache = PrefixCache(1 << 20)
    first = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "u" * 100}]
    assert serve(cache, first) == 0
    assert serve(cache, first) == (len(all_text(first)) // BLOCK_CHARS) * BLOCK_TOKENS  # every full block
    other_user = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "v" * 100}]
    assert serve(cache, other_user) == 10 * BLOCK_TOKENS  # the shared system prompt only
    stats = cache.stats()
    assert stats["requests"] == 3 and stats["cached_tokens"] == stats["prompt_tokens"] - stats["computed_tokens"]


def test_the_next_turn_finds_the_previous_turn_and_its_reply():
    cache = PrefixCache(1 << 20)
    turn1 = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "task"}]
    answer = "a" * (5 * BLOCK_CHARS)
    serve(cache, turn1, answer)
    turn2 = turn1 + [{"role": "assistant", "content": answer}, {"role": "user", "content": "go on"}]
    reused = len(all_text(turn1 + [{"role": "assistant", "content": answer}])) // BLOCK_CHARS * BLOCK_TOKENS
    assert serve(cache, turn2) == reused > 14 * BLOCK_TOKENS  # the system prompt, the task and the reply


def test_requests_arriving_together_both_compute_their_prefix():
    cache = PrefixCache(1 << 20)
    messages = [{"role": "system", "content": SYSTEM}]
    a, b = cache.lookup(messages), cache.lookup(messages)  # both arrive before either is answered
    for found in (a, b):
        cache.answered(found, reply("x"))
    assert a.cached_tokens == b.cached_tokens == 0 and cache.lookup(messages).cached_tokens == 10 * BLOCK_TOKENS


def test_lru_eviction_at_capacity():
    cache = PrefixCache(12 * BLOCK_TOKENS)  # room for 12 blocks
    one = [{"role": "system", "content": "1" * (8 * BLOCK_CHARS)}]
    two = [{"role": "system", "content": "2" * (8 * BLOCK_CHARS)}]
    serve(cache, one)
    serve(cache, two)  # 16 blocks > 12: the 4 least recently used (one's first blocks) go
    assert cache.stats()["evicted_blocks"] == 4 and cache.stats()["resident_tokens"] == 12 * BLOCK_TOKENS
    assert serve(cache, one) == 0  # its lead block is gone: nothing of it is a prefix hit
    assert serve(cache, one) == 8 * BLOCK_TOKENS  # recomputed, it is back (and two's oldest blocks went)


def _post(url: str, body: dict) -> bytes:
    request = urllib.request.Request(f"{url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return bytes(resp.read())


def test_the_server_reports_cached_tokens_in_usage_and_stats_and_is_off_by_default():
    question = {"role": "user", "content": "Question q0: what is 0 + 0?"}
    body = {"model": "test-model", "seed": 1, "messages": [{"role": "system", "content": SYSTEM}, question]}
    with SimServer(make_policy(FakeBench()), prefix_cache_tokens=1 << 16) as server:
        first, second = (json.loads(_post(server.base_url, body)) for _ in range(2))
        with urllib.request.urlopen(f"{server.base_url}/prefix_cache", timeout=10) as resp:
            stats = json.loads(resp.read())
    assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] >= 10 * BLOCK_TOKENS
    assert stats["requests"] == 2 and stats["cached_tokens"] == second["usage"]["prompt_tokens_details"][
        "cached_tokens"] and stats["simulated"] is True
    with SimServer(make_policy(FakeBench())) as server:  # off: the same request, the same bytes
        first_bytes, second_bytes = (_post(server.base_url, body) for _ in range(2))
    assert first_bytes == second_bytes and b"prompt_tokens_details" not in first_bytes
