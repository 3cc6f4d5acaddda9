"""The reflection client: every reflection / proposal call of every method goes through here (protocol-v1 s. 7).

One endpoint of its own (`--reflection-endpoint` / REFLECTION_MODEL_BASE_URL; the simulated endpoint with model id
"simulated-reflection" when a job runs simulated without one), thinking on, a 48,000-token ceiling, the
method-native temperature / top-p (protocol 5.4 defaults 1.0 / 1.0), and a logical seed per call (section 5.5:
`request_seed(optimizer_seed, cell_id, "reflection", key, sha256(prompt), purpose, 0)`, i.e. the SHA-256 of the
prompt text in the example-id slot, the method's logical key in the iteration slot, the purpose in the role slot).

Recording is engine.recorder's (the one recorded-call path, as for agent turns): each call is a node under the run
node and a `model_call` event (payload `component: "reflection"`) written to the store BEFORE the text is handed to
the method; a call already recorded under the same logical request key (content hash of the request body) is
replayed from the store, not re-sent; infrastructure errors are retried with the same seed (1 + MAX_INFRA_RETRIES
attempts, engine.retry).
Reflection calls are not rollouts: they never touch the ledger; their calls and tokens are counted per purpose, and
the calls that gave the method no text (after their retries) per kind (`failures` in the component's usage in
optimization.json; `context_length_exceeded` for a 400 naming the context length). A 400 is never sent again
unchanged (engine/recorder.py).

The same mechanism serves the other uncharged model calls a method makes (protocol 8.3/8.4): a `ReflectionClient`
built with `component="judge"` or `component="probe"` over the TASK endpoints (the outage-aware task pool itself),
with that component's decoding (thinking off, the method's temperature / top-p / token cap, the task runners'
repetition penalty). It records under its component name, seeds with the component in the phase slot, and
replays on resume exactly like reflection. `complete(messages, ...)` sends a full message list (a probe's system
prompt + task); `propose(prompt, ...)` is the one-user-message case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import BadRequestError, InfrastructureError
from core.models import Usage
from core.protocol import MAX_INFRA_RETRIES, REFLECTION_DECODING
from engine.call_sites import ComponentCall
from engine.recorder import ChatEndpoint, Recorder
from engine.retry import RetryPolicy
from engine.store import Store

COMPONENT = "reflection"

__all__ = ["COMPONENT", "ChatEndpoint", "ReflectionClient"]


class ReflectionClient:
    """Implements core.optimizer.ReflectionModel (and core.optimizer.ModelClient) over one OpenAI-compatible
    endpoint or an outage-aware pool of them, recorded in the store under `component`."""

    def __init__(self, *, endpoint: ChatEndpoint, store: Store, run_node: str, cell_id: str, optimizer_seed: int,
                 temperature: float | None = None, top_p: float | None = None,
                 retry: RetryPolicy = RetryPolicy(), component: str = COMPONENT, max_tokens: int | None = None,
                 thinking: bool | None = None, extra_body: Mapping[str, Any] | None = None):
        self.endpoint = endpoint
        self.component = component
        self.max_tokens = int(REFLECTION_DECODING["max_tokens"]) if max_tokens is None else max_tokens
        self.thinking = bool(REFLECTION_DECODING["thinking"]) if thinking is None else thinking
        self.extra_body = dict(extra_body or {})
        self.run_node = run_node
        self.cell_id = cell_id
        self.optimizer_seed = optimizer_seed
        self.temperature = REFLECTION_DECODING["temperature"] if temperature is None else temperature
        self.top_p = REFLECTION_DECODING["top_p"] if top_p is None else top_p
        self.recorder = Recorder(store=store, endpoint=endpoint, execution_id=f"{component}#g{store.generation}",
                                 attempts=MAX_INFRA_RETRIES + 1, retry=retry)
        self._usage: dict[str, Usage] = {}
        self._failures: dict[str, int] = {}  # calls that gave the method no text, by kind (this process's)

    @property
    def live_calls(self) -> int:
        return self.recorder.live_calls

    @property
    def replayed_calls(self) -> int:
        return self.recorder.replayed_calls

    # ------------------------------------------------------------------ request
    def site(self, *, purpose: str, key: str) -> ComponentCall:
        return ComponentCall(run_node=self.run_node, component=self.component, purpose=purpose, key=key,
                             optimizer_seed=self.optimizer_seed, cell_id=self.cell_id)

    def body_for(self, messages: Sequence[Mapping[str, str]], *, temperature: float | None = None,
                 max_tokens: int | None = None) -> dict[str, Any]:
        """The request body before its seed (the recorder derives it from the call site)."""
        return {
            "model": self.endpoint.model_id,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "chat_template_kwargs": {"enable_thinking": self.thinking},
            **self.extra_body,
        }

    async def propose(self, prompt: str, *, purpose: str, key: str, temperature: float | None = None,
                      max_tokens: int | None = None) -> str:
        return await self.complete([{"role": "user", "content": prompt}], purpose=purpose, key=key,
                                   temperature=temperature, max_tokens=max_tokens)

    async def complete(self, messages: Sequence[Mapping[str, str]], *, purpose: str, key: str,
                       temperature: float | None = None, max_tokens: int | None = None) -> str:
        body = self.body_for(messages, temperature=temperature, max_tokens=max_tokens)
        try:
            call = await self.recorder.call(self.site(purpose=purpose, key=key), body)
        except InfrastructureError as exc:  # after its retries: the method gets no text; counted, then raised
            kind = failure_kind(exc)
            self._failures[kind] = self._failures.get(kind, 0) + 1
            raise
        self._usage[purpose] = self._usage.get(purpose, Usage()) + call.usage
        return call.response.get("content") or ""

    # ------------------------------------------------------------------ usage
    def usage(self) -> dict[str, Any]:
        """Totals plus a per-purpose breakdown; the same for a live and a replayed run (replays are not listed)."""
        usage: dict[str, Any] = {**Usage.total(self._usage.values()).call_counts(), "model_id": self.endpoint.model_id,
                                 "component": self.component,
                                 "by_purpose": {k: v.call_counts() for k, v in sorted(self._usage.items())}}
        if self._failures:  # only when some call failed (the usage of a clean run is unchanged)
            usage["failures"] = dict(sorted(self._failures.items()))
        return usage


def failure_kind(exc: InfrastructureError) -> str:
    """A failed call's kind for the counts: its error kind, a 400 for the context length named as such."""
    text = str(exc).lower()
    if isinstance(exc, BadRequestError) and ("context length" in text or "context_length" in text):
        return "context_length_exceeded"
    return exc.kind
