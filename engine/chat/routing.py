"""Which endpoint of the pool serves a request: least-loaded, or cache-aware with bounded load (the default when the
pool has more than one endpoint; `EndpointPool(..., routing="least-loaded")` selects the old way for comparison).

Why route by cache: vLLM keeps the KV blocks of prompt prefixes it has computed (automatic prefix caching), per
server. Turn k+1 of an agent's conversation repeats turn k's whole request, and the rows of a bundle repeat the
role's system prompt, so where a request goes decides how much prefill the fleet recomputes.

`CacheAware` keys a conversation by its requests' own messages, not by a key the caller carries: a request whose
message list extends an earlier request's list (the longest such prefix wins) continues that conversation and goes
to the endpoint that served it; that is exactly the condition under which the server can reuse the earlier prefill,
it holds for every caller alike (native topologies, framework agents behind the gateway, reflection), it survives
any wrapper of the pool (the sweep's shared evaluations), and a conversation rebuilt from scratch (nothing to
reuse) is rightly a new one. A new conversation is placed by rendezvous hashing of its head (the system prompt
and first user message: a debate's peers start alike, so they meet the same cache), over the endpoints' URLs, so
every pool over the same servers agrees.

Bounded load (consistent hashing with bounded loads, Mirrokni et al. 2018): an endpoint whose demand (requests
routed to it and not finished, waiting ones included) would exceed (1 + eps) x the capacity-weighted mean is
skipped, so none runs hot; a request never waits for a slot at its preferred endpoint while another has one free.
The candidates are the endpoint of the conversation, then the head's rendezvous order; the first acceptable one
serves, else the least-loaded usable endpoint. Ejected and paused endpoints are not candidates: a preferred
endpoint that is out is passed over at once, with no wait.

Routing decides only where a request goes: the body, its seed and its response do not depend on it (the card's
model_call record names the endpoint, nothing else changes). `SERVED_BY` carries the index of the endpoint a
request was handed to back to the recorder (a context variable: the await chain from the recorder to the
endpoint runs in one task, through any wrapper of the pool)."""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from core.canonical import canonical_json
from core.errors import UsageError

DEFAULT_EPS = 0.25  # bounded load: no endpoint above 1.25 x the mean demand
DEFAULT_AFFINITY_ENTRIES = 1 << 16  # conversations remembered (LRU); a forgotten one is placed as a new one
SERVED_BY: ContextVar[int | None] = ContextVar("mpb_served_by", default=None)
# `--routing` of `job` and `sweep run`: the routing of every pool built without one (None: the default rule)
ROUTING: ContextVar[str | None] = ContextVar("mpb_routing", default=None)


class Limiter(Protocol):
    borrowed_tokens: int  # requests in flight now

    @property
    def total_tokens(self) -> int: ...  # the current in-flight limit (the pool keeps it at the health's limit)


class Target(Protocol):
    """What a router reads of an endpoint (engine.chat.endpoint.Endpoint)."""

    @property
    def base_url(self) -> str: ...

    @property
    def limiter(self) -> Limiter: ...


class Router(Protocol):
    name: str

    def choose(self, body: dict[str, Any], usable: Sequence[int]) -> int: ...  # index of the serving endpoint

    def finished(self, index: int) -> None: ...  # a request routed there came back (answered or failed)


class LeastLoaded:
    """The endpoint with the smallest share of its limit in flight; ties go round-robin."""

    name = "least-loaded"

    def __init__(self, targets: Sequence[Target]):
        self.targets, self._next = targets, 0

    def choose(self, body: dict[str, Any], usable: Sequence[int]) -> int:
        return self.least(usable, lambda i: self.targets[i].limiter.borrowed_tokens)

    def least(self, usable: Sequence[int], load: Callable[[int], int]) -> int:
        """The usable endpoint with the smallest `load` per slot of its limit; ties round-robin."""
        start, n = self._next, len(self.targets)
        self._next += 1
        order = sorted(usable, key=lambda i: (i - start) % n)
        return min(order, key=lambda i: load(i) / self.targets[i].limiter.total_tokens)

    def finished(self, index: int) -> None:
        pass


def prefix_digests(messages: Sequence[Any]) -> list[bytes]:
    """digest[j] = hash of messages[:j + 1] (canonical JSON of each message, chained: a JSON object delimits
    itself, so two different lists never share a digest)."""
    running, out = hashlib.blake2b(digest_size=16), []
    for message in messages:
        running.update(canonical_json(message).encode("utf-8"))
        out.append(running.digest())
    return out


def rendezvous(head: bytes, targets: Sequence[Target], usable: Sequence[int]) -> list[int]:
    """`usable` ordered by highest random weight of (head, endpoint URL)."""
    def weight(i: int) -> bytes:
        return hashlib.blake2b(head + targets[i].base_url.encode("utf-8"), digest_size=8).digest()

    return sorted(usable, key=weight, reverse=True)


class CacheAware:
    """Conversation affinity, then prefix placement, both under bounded load; least-loaded as the fallback."""

    name = "cache-aware"

    def __init__(self, targets: Sequence[Target], *, eps: float = DEFAULT_EPS,
                 affinity_entries: int = DEFAULT_AFFINITY_ENTRIES):
        if eps <= 0:
            raise UsageError(f"cache-aware routing needs eps > 0, got {eps}")
        self.targets, self.eps, self.affinity_entries = targets, eps, affinity_entries
        self.demand = [0] * len(targets)  # routed here, not finished (in flight or waiting for a slot)
        self.fallback = LeastLoaded(targets)
        self.affinity: OrderedDict[bytes, int] = OrderedDict()  # digest of a request's messages -> its endpoint
        self.counts = {"affinity": 0, "placed": 0, "fallback": 0}  # how each choice was made

    def choose(self, body: dict[str, Any], usable: Sequence[int]) -> int:
        messages = body.get("messages")
        digests = prefix_digests(messages) if isinstance(messages, list) and messages else [b""]
        previous = self._previous(digests)
        head = digests[min(1, len(digests) - 1)]
        candidates = ([previous] if previous is not None else []) + rendezvous(head, self.targets, usable)
        index = next((i for i in candidates if self.acceptable(i, usable)), None)
        if index is None:
            index = self.fallback.least(usable, self.demand.__getitem__)
            self.counts["fallback"] += 1
        else:
            self.counts["affinity" if index == previous else "placed"] += 1
        self._remember(digests[-1], index)
        self.demand[index] += 1
        return index

    def finished(self, index: int) -> None:
        self.demand[index] -= 1

    def acceptable(self, index: int, usable: Sequence[int]) -> bool:
        """Usable, under the load bound, and not full unless every usable endpoint is full."""
        if index not in usable:
            return False
        limits = {i: self.targets[i].limiter.total_tokens for i in usable}
        mine = self.demand[index]
        if mine >= limits[index] and any(self.demand[i] < limits[i] for i in usable):
            return False
        return mine + 1 <= self.bound(index, usable, limits)

    def bound(self, index: int, usable: Sequence[int], limits: dict[int, int]) -> int:
        """The most requests endpoint `index` may hold once this one is routed: ceil((1 + eps) x its share, by
        limit, of all demand including this request)."""
        total = sum(self.demand[i] for i in usable) + 1
        return math.ceil((1 + self.eps) * total * limits[index] / sum(limits.values()))

    def _previous(self, digests: list[bytes]) -> int | None:
        """The endpoint of the longest earlier request whose messages this request's messages extend (or repeat)."""
        for digest in reversed(digests):
            index = self.affinity.get(digest)
            if index is not None:
                self.affinity.move_to_end(digest)
                return index
        return None

    def _remember(self, digest: bytes, index: int) -> None:
        self.affinity[digest] = index
        self.affinity.move_to_end(digest)
        while len(self.affinity) > self.affinity_entries:
            self.affinity.popitem(last=False)


ROUTINGS = {LeastLoaded.name: LeastLoaded, CacheAware.name: CacheAware}


def make_router(routing: str | Router | None, targets: Sequence[Target]) -> Router:
    """The router named `routing` (or `routing` itself, built over the same endpoints); None: cache-aware when there
    is more than one endpoint, else least-loaded."""
    if routing is not None and not isinstance(routing, str):
        return routing
    name = routing or ROUTING.get() or (CacheAware.name if len(targets) > 1 else LeastLoaded.name)
    if name not in ROUTINGS:
        raise UsageError(f"unknown routing {name!r}; known: {', '.join(ROUTINGS)}")
    router: Router = ROUTINGS[name](targets)
    return router


def check_routing(name: str) -> str:
    """A `--routing` value (UsageError, one line, for an unknown one)."""
    if name not in ROUTINGS:
        raise UsageError(f"--routing must be one of {', '.join(ROUTINGS)}, got {name!r}")
    return name


@contextmanager
def default_routing(name: str | None) -> Iterator[None]:
    """Pools built in this block (and in tasks started from it) without a routing of their own use `name` (None:
    cache-aware when a pool has more than one endpoint, else least-loaded)."""
    token = ROUTING.set(None if name is None else check_routing(name))
    try:
        yield
    finally:
        ROUTING.reset(token)
