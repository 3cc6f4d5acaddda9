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

Failing clients (issue W item 4). A call gives the method no usable text when it fails after its retries (an
infrastructure error; a 400 is sent once), when nothing can be sent because the prompt cannot fit the endpoint's
context (engine/reflection_fit.py), or, for reflection, when the reply is empty or whitespace (`empty_text`: a
proposal cannot be parsed from it; a judge's or probe's empty reply is that component's answer, which the method
scores as its protocol says). After BREAKER_AFTER (3) such calls IN A ROW the client is unavailable: that call
raises core.errors.ReflectionUnavailableError (not an InfrastructureError, so the methods' "go on without a
proposal" does not swallow it), as does every later call without sending; the job records an infrastructure-
invalid optimization with stop reason `<component>_unavailable` (seed bundle kept, the job `degraded` and healed by
a later run), and warns once on stderr naming the endpoint, the kind and what to do. A usable reply resets the
count. K = 3: one failure is noise (the call was already retried), three in a row of the same endpoint is a
pattern; it bounds the rollouts a method charges for proposals it cannot make to K iterations (GEPA: K x the
3-row parent minibatch). Judge and probe get the same breaker over their errors (their endpoints are the task
pool, whose own outage handling runs first). On resume the breaker is rebuilt from the replayed calls: recorded
answers (empty ones included) replay, failed calls are sent again, so a healed endpoint lets the method go on.

The same mechanism serves the other uncharged model calls a method makes (protocol 8.3/8.4): a `ReflectionClient`
built with `component="judge"` or `component="probe"` over the TASK endpoints (the outage-aware task pool itself),
with that component's decoding (thinking off, the method's temperature / top-p / token cap, the task runners'
repetition penalty). It records under its component name, seeds with the component in the phase slot, and
replays on resume exactly like reflection. `complete(messages, ...)` sends a full message list (a probe's system
prompt + task); `propose(prompt, ...)` is the one-user-message case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from core.errors import BadRequestError, InfrastructureError, ReflectionUnavailableError
from core.models import Usage
from core.protocol import MAX_INFRA_RETRIES, REFLECTION_DECODING, Decoding
from engine.call_sites import ComponentCall
from engine.chat.auth import redacted_url
from engine.log import get_logger
from engine.recorder import ChatEndpoint, Recorder
from engine.reflection_fit import fit
from engine.retry import RetryPolicy
from engine.store import Store

COMPONENT = "reflection"
BREAKER_AFTER = 3  # consecutive calls without usable text that make a client unavailable (module docstring)
EMPTY_TEXT = "empty_text"
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"

log = get_logger("engine.reflection")

__all__ = ["BREAKER_AFTER", "COMPONENT", "ChatEndpoint", "ReflectionClient"]


class ReflectionClient:
    """Implements core.optimizer.ReflectionModel (and core.optimizer.ModelClient) over one OpenAI-compatible
    endpoint or an outage-aware pool of them, recorded in the store under `component`."""

    def __init__(self, *, endpoint: ChatEndpoint, store: Store, run_node: str, cell_id: str, optimizer_seed: int,
                 temperature: float | None = None, top_p: float | None = None,
                 retry: RetryPolicy = RetryPolicy(), component: str = COMPONENT, decoding: Decoding | None = None,
                 breaker_after: int = BREAKER_AFTER):
        self.endpoint = endpoint
        self.component = component
        decoding = REFLECTION_DECODING if decoding is None else decoding  # the component's (judge, probe)
        self.max_tokens = decoding.max_tokens
        self.thinking = decoding.thinking
        self.repetition_penalty = decoding.repetition_penalty
        self.run_node = run_node
        self.cell_id = cell_id
        self.optimizer_seed = optimizer_seed
        self.temperature = decoding.temperature if temperature is None else temperature
        self.top_p = decoding.top_p if top_p is None else top_p
        self.recorder = Recorder(store=store, endpoint=endpoint, execution_id=f"{component}#g{store.generation}",
                                 attempts=MAX_INFRA_RETRIES + 1, retry=retry)
        self._usage: dict[str, Usage] = {}
        self._failures: dict[str, int] = {}  # calls that gave the method no text, by kind (this process's)
        self.breaker_after = breaker_after
        self._in_a_row = 0  # calls without usable text since the last usable one
        self._unavailable: ReflectionUnavailableError | None = None
        self.trimmed_calls = 0  # calls whose prompt was cut to fit the endpoint's context

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
        body = {
            "model": self.endpoint.model_id,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "chat_template_kwargs": {"enable_thinking": self.thinking},
        }
        if self.repetition_penalty is not None:  # the task model's components send the task runners' penalty
            body["repetition_penalty"] = self.repetition_penalty
        return body

    async def propose(self, prompt: str, *, purpose: str, key: str, temperature: float | None = None,
                      max_tokens: int | None = None) -> str:
        return await self.complete([{"role": "user", "content": prompt}], purpose=purpose, key=key,
                                   temperature=temperature, max_tokens=max_tokens)

    async def complete(self, messages: Sequence[Mapping[str, str]], *, purpose: str, key: str,
                       temperature: float | None = None, max_tokens: int | None = None) -> str:
        if self._unavailable is not None:  # the breaker tripped: nothing is sent any more
            raise self._unavailable
        asked = self.max_tokens if max_tokens is None else max_tokens
        fitted = fit(messages, asked, self.max_model_len)
        if not fitted.fits:  # not sent: the endpoint would answer 400 for the context length
            self._failed(CONTEXT_LENGTH_EXCEEDED, BadRequestError(
                f"{self.component} prompt of {purpose} does not fit the endpoint's context of "
                f"{self.max_model_len} tokens even cut (context length; not sent)", status_code=400))
        if fitted.trimmed_chars:
            self.trimmed_calls += 1
        body = self.body_for(fitted.messages, temperature=temperature, max_tokens=fitted.max_tokens)
        try:
            call = await self.recorder.call(self.site(purpose=purpose, key=key), body)
        except InfrastructureError as exc:  # after its retries: the method gets no text; counted, then raised
            self._failed(failure_kind(exc), exc)
        self._usage[purpose] = self._usage.get(purpose, Usage()) + call.usage
        text = call.response.get("content") or ""
        if self.component == COMPONENT and not text.strip():  # no proposal can be parsed from it
            self._count(EMPTY_TEXT)
            self._breaker(EMPTY_TEXT, None)
            return text
        self._in_a_row = 0
        return text

    @property
    def max_model_len(self) -> int | None:
        """The endpoint's context window as the start-up check heard it (None: not reported, nothing is fitted)."""
        endpoints = getattr(self.endpoint, "endpoints", [self.endpoint])  # a pool: the smallest of its endpoints'
        found = [v for v in (getattr(e, "max_model_len", None) for e in endpoints)
                 if isinstance(v, int) and not isinstance(v, bool) and v > 0]
        return min(found) if found else None

    def _count(self, kind: str) -> None:
        self._failures[kind] = self._failures.get(kind, 0) + 1

    def _failed(self, kind: str, exc: InfrastructureError) -> NoReturn:
        self._count(kind)
        self._breaker(kind, exc)
        raise exc

    def _breaker(self, kind: str, exc: InfrastructureError | None) -> None:
        """One more call without usable text; the K-th in a row makes the client unavailable (raised now)."""
        self._in_a_row += 1
        if self._in_a_row < self.breaker_after or self._unavailable is not None:
            return
        where = endpoint_name(self.endpoint)
        self._unavailable = ReflectionUnavailableError(
            f"the {self.component} endpoint {where} (model {self.endpoint.model_id!r}) gave no usable text on "
            f"{self._in_a_row} consecutive calls (last: {kind}{': ' + str(exc)[:300] if exc else ''}); "
            f"{hint(kind)}", component=self.component, failure_kind=kind, consecutive=self._in_a_row,
            endpoint=where)
        log.warning(f"warning: {self.component} unavailable: {where} (model {self.endpoint.model_id!r}) gave no "
                    f"usable text on {self._in_a_row} consecutive calls ({kind}); the method stops "
                    f"({self._unavailable.stop_reason}), the seed bundle is kept and the job is degraded; "
                    f"{hint(kind)}", kind="model_client_unavailable", component=self.component,
                    failure_kind=kind, consecutive=self._in_a_row, endpoint=where)
        raise self._unavailable from exc

    def failures(self) -> dict[str, int]:
        """The calls that gave the method no text so far, by kind (the progress line)."""
        return dict(sorted(self._failures.items()))

    # ------------------------------------------------------------------ usage
    def usage(self) -> dict[str, Any]:
        """Totals plus a per-purpose breakdown; the same for a live and a replayed run (replays are not listed)."""
        usage: dict[str, Any] = {**Usage.total(self._usage.values()).call_counts(), "model_id": self.endpoint.model_id,
                                 "component": self.component,
                                 "by_purpose": {k: v.call_counts() for k, v in sorted(self._usage.items())}}
        if self._failures:  # only when some call failed (the usage of a clean run is unchanged)
            usage["failures"] = dict(sorted(self._failures.items()))
        return usage


def endpoint_name(endpoint: Any) -> str:
    """The endpoint's URL without credentials (a pool: its first endpoint, the reflection pool has one)."""
    first = getattr(endpoint, "endpoints", [endpoint])[0]
    url = getattr(first, "base_url", None)
    return redacted_url(url) if isinstance(url, str) else type(endpoint).__name__


def hint(kind: str) -> str:
    """What to do about a client that keeps failing with `kind`."""
    if kind == CONTEXT_LENGTH_EXCEEDED:
        return ("the prompts do not fit the model's context: lower the method's per-section caps or serve the "
                "model with a larger --max-model-len, then run the job again to heal it")
    if kind == EMPTY_TEXT:
        return ("the model answers with empty text: check the served model and its chat template (thinking "
                "budget, max_tokens), then run the job again to heal it")
    return "check that the endpoint is up and serving the model, then run the job again to heal it"


def failure_kind(exc: InfrastructureError) -> str:
    """A failed call's kind for the counts: its error kind, a 400 for the context length named as such."""
    text = str(exc).lower()
    if isinstance(exc, BadRequestError) and ("context length" in text or "context_length" in text):
        return "context_length_exceeded"
    return exc.kind
