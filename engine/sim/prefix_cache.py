"""The simulated endpoint's prefix cache: what vLLM's automatic prefix caching would reuse on this one server.

The prompt is the sim's own token model (policy.render counts `len(all_text(messages)) // 4` prompt tokens: 4
characters a token), cut into blocks of BLOCK_TOKENS tokens; block j is keyed by the hash of the prompt text up to
its end (a chain, as vLLM keys a block by its parent's hash and its own tokens), and only full blocks are cached.
A request's cached tokens are its leading blocks found in the cache when it arrives; the rest is prefill computed.
Its blocks become reusable when it is answered (two requests that arrive together both compute their common
prefix, as two requests prefilled in the same step would), the blocks its reply filled included (vLLM caches the
full blocks of generated tokens too): the reply's text is keyed as the next turn's prompt renders it (all_text of
the conversation with the assistant message appended), so turn k+1 finds turn k's whole conversation where turn k
ran. The least recently used blocks are evicted beyond `capacity_tokens`.

Reported per answered request in `usage.prompt_tokens_details.cached_tokens` (OpenAI's and vLLM's field; the chat
client does not keep it, so a record never depends on where a request went) and summed in `stats()`, which the
server serves at GET /v1/prefix_cache. Off unless given a capacity (`serve-sim --prefix-cache-tokens N`,
`SimServer(prefix_cache_tokens=N)`): a cached count is the one part of a response that depends on what the server
saw before, and the sim otherwise answers the same request with the same bytes (engine/sim/policy.py). Off, it
still counts requests and prompt tokens (all computed) and leaves responses untouched. On a GPU, vLLM's own counters (`vllm:prefix_cache_queries` and
`vllm:prefix_cache_hits` on /metrics) are the check.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from engine.sim.fault_responses import json_response
from engine.sim.request_text import all_text

BLOCK_TOKENS = 16
CHARS_PER_TOKEN = 4  # engine/sim/policy.py render(): prompt_tokens = len(all_text(messages)) // 4
DEFAULT_CAPACITY_TOKENS = 0  # off; 1 << 18 (262,144 tokens) is of the order of a 7-8B model's KV cache on 80 GB


@dataclass(frozen=True)
class Lookup:
    """One request's prompt as found on arrival: its full blocks' keys, how many lead blocks were cached, and its
    prompt text and the hash chain over its full blocks (to key the blocks its reply fills)."""

    blocks: tuple[bytes, ...]
    cached_blocks: int
    text: str = ""
    chain: Any = None

    @property
    def cached_tokens(self) -> int:
        return self.cached_blocks * BLOCK_TOKENS


BLOCK_CHARS = BLOCK_TOKENS * CHARS_PER_TOKEN


def block_keys(text: str, start: int = 0, chain: Any = None) -> tuple[tuple[bytes, ...], Any]:
    """Key of every full block of `text` from character `start` (a block boundary) on: the hash of the text up to
    the block's end, continuing `chain` (the hash over text[:start]); and the chain after the last full block."""
    running = hashlib.blake2b(digest_size=16) if chain is None else chain.copy()
    keys = []
    for at in range(start, len(text) // BLOCK_CHARS * BLOCK_CHARS, BLOCK_CHARS):
        running.update(text[at:at + BLOCK_CHARS].encode("utf-8"))
        keys.append(running.digest())
    return tuple(keys), running


OFF = Lookup((), 0)


class PrefixCache:
    """A block-hash LRU of `capacity_tokens` tokens, with counters of the prefill it saved and computed."""

    def __init__(self, capacity_tokens: int = DEFAULT_CAPACITY_TOKENS):
        if capacity_tokens < 0:
            raise ValueError("the prefix cache capacity must be >= 0 tokens")
        self.capacity_blocks = capacity_tokens // BLOCK_TOKENS
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        self.requests = self.prompt_tokens = self.cached_tokens = self.evicted_blocks = 0

    def lookup(self, messages: Sequence[Mapping[str, Any]]) -> Lookup:
        """On arrival: the request's blocks and how many lead blocks are cached (those are touched as used)."""
        if not self.capacity_blocks:
            return OFF
        text = all_text(messages)
        keys, chain = block_keys(text)
        cached = 0
        for key in keys:
            if key not in self._blocks:
                break
            self._blocks.move_to_end(key)
            cached += 1
        return Lookup(keys, cached, text, chain)

    def answered(self, found: Lookup, rendered: dict[str, Any]) -> None:
        """The request was answered: count it, cache its blocks, report its cached tokens in the response usage."""
        usage = rendered.get("usage")
        self.requests += 1
        self.prompt_tokens += (usage.get("prompt_tokens") or 0) if isinstance(usage, dict) else 0
        if found is OFF:
            return
        self.cached_tokens += found.cached_tokens
        for key in found.blocks + self._reply_blocks(found, rendered):
            self._blocks[key] = None
            self._blocks.move_to_end(key)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)
            self.evicted_blocks += 1
        if isinstance(usage, dict):
            usage["prompt_tokens_details"] = {"cached_tokens": found.cached_tokens}

    @staticmethod
    def _reply_blocks(found: Lookup, rendered: dict[str, Any]) -> tuple[bytes, ...]:
        """The keys of the full blocks the reply filled, as the next turn's prompt (with this reply) renders."""
        choices = rendered.get("choices") or [{}]
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            return ()
        text = all_text([{"content": found.text}, message])
        return block_keys(text, len(found.blocks) * BLOCK_CHARS, found.chain)[0]

    def stats(self) -> dict[str, Any]:
        return {"block_tokens": BLOCK_TOKENS, "capacity_tokens": self.capacity_blocks * BLOCK_TOKENS,
                "resident_tokens": len(self._blocks) * BLOCK_TOKENS, "requests": self.requests,
                "prompt_tokens": self.prompt_tokens, "cached_tokens": self.cached_tokens,
                "computed_tokens": self.prompt_tokens - self.cached_tokens, "evicted_blocks": self.evicted_blocks,
                "simulated": True}

    async def handle(self, request: web.Request) -> web.Response:
        """GET /v1/prefix_cache: `stats()` as JSON."""
        return json_response(self.stats())
