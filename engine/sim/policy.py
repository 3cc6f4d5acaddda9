"""The scripted, seed-deterministic model behind the labelled simulated endpoint.

A `Policy` is built from a mapping dataset-name -> (Benchmark, rows with gold). It indexes every row by
`benchmark.render_task(row)` and answers an OpenAI chat-completions request body as follows, first rule first:

0. **Judge** (a task-model request whose messages carry `<judge_task>KIND</judge_task>`): the scripted judge of
   engine/sim/judge.py (MAPRO / MASPO judge prompts), a pure function of the request text and the gold answers.
1. **Reflection** (request `model` == the reflection model id, default "simulated-reflection"): take the text
   between `<current_instruction>` and `</current_instruction>` (if absent, the first ``` fenced block) in the
   messages; for every failure mode of every loaded benchmark whose `feedback_pattern` regex matches anywhere in
   the request's messages, append its `remedy` sentence on a new line (once, and not if the instruction already
   contains it, case-insensitive); reply with the result in a ``` fenced block.
2. **Manager with delegate tools** (the request offers tools named `delegate_to_<worker>`, and a row matches):
   before any delegation in the conversation, delegate once to the first offered worker; afterwards answer as
   rule 5 does and end the message with TERMINATE. (A centralized rollout then costs 2 manager calls + 1 worker
   turn instead of running to its turn cap.)
2a. **Speaker selection** (AutoGen's selector prompt, "select the next role from [...]"): the candidate the
   latest message names first, else the one named last in the conversation, else the first (engine/sim/speaker.py).
2b. **After a tool result** (last message has role "tool"): reply "Done." with no tool calls.
3. **No matching task**: reply "SIMULATED: no matching task" (HTTP 200). A row matches when its rendered task
   equals a user message's content (exact lookup), else when it is contained in a user message (multi-agent stage
   prompts that embed the task; the longest contained task wins).
4. **Non-answering role** (the system prompt lacks "PROTECTED FINAL OUTPUT CONTRACT"): a short deterministic
   analysis note naming the row id, no tool calls.
5. **Answering role** — the documented accuracy function. With `seed` the request's integer seed (0 if absent)
   and `S` the concatenated system messages, for each failure mode m in `benchmark.failure_modes` order:

       u_m = int(sha256(f"{row.id}|{seed}|{m.name}")[:8 bytes], big-endian) / 2**64          # in [0, 1)
       m is *exhibited* iff  m.remedy.lower() not in S.lower()  and  u_m < m.rate

   The reply exhibits the FIRST exhibited mode (None when no mode is exhibited: a correct answer):

       reply = benchmark.simulate(row, mode, random.Random(int(sha256(f"{row.id}|{seed}")[:8 bytes])))

   Hence P(correct) = prod over unremedied modes of (1 - m.rate), and adding a remedy never turns a correct
   (row, seed) into a wrong one. `Policy.expected_mode(row, system_prompt, seed)` computes the mode exactly.

Replies carry the simulated tool calls only when the request offers tools (`tools` non-empty and `tool_choice`
not "none"); otherwise only the text content is sent ("" when the simulated reply had no text).
Everything is a pure function of (request body, seed): the same request always gets the same response body.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from core.canonical import canonical_json, sha256_hex
from core.models import Row
from core.simulation import FailureMode, SimReply, SimulatedBenchmark
from core.vocabulary import SIMULATED_REFLECTION_MODEL_ID, SIMULATED_TASK_MODEL_ID
from engine.sim.faults import request_key
from engine.sim.substring_index import SubstringIndex
from engine.sim.judge import SimJudge, judge_kind
from engine.sim.request_text import (all_text, message_text, mode_draw, offered_tool_names, offers_tools,
                                     reply_rng, request_seed_of, system_prompt_of)
from engine.sim.speaker import speaker_choice

CONTRACT_MARKER = "PROTECTED FINAL OUTPUT CONTRACT"
DEFAULT_REFLECTION_MODEL = SIMULATED_REFLECTION_MODEL_ID
DEFAULT_TASK_MODEL = SIMULATED_TASK_MODEL_ID  # the id jobs send when they run simulated
NO_MATCH_TEXT = "SIMULATED: no matching task"
TOOL_FOLLOWUP_TEXT = "Done."
SIMULATED_NOTE = "simulated endpoint: scores are not model scores"
SYSTEM_FINGERPRINT = "mpb-simulated-endpoint"
CREATED = 1_700_000_000  # constant so bodies are byte-identical across runs

_INSTRUCTION_RE = re.compile(r"<current_instruction>(.*?)</current_instruction>", re.DOTALL)
_FENCE_RE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Match:
    benchmark: SimulatedBenchmark
    row: Row


@dataclass(frozen=True)
class Decision:
    """What the policy decided for one request (before it is rendered as a chat.completion body)."""

    kind: str  # "reflection" | "tool_followup" | "no_match" | "analysis" | "answer"
    reply: SimReply
    row_id: str | None = None
    mode: str | None = None


class Policy:
    """Seed-deterministic scripted model over labelled benchmark rows."""

    def __init__(
        self,
        datasets: Mapping[str, tuple[SimulatedBenchmark, Sequence[Row]]],
        reflection_model: str = DEFAULT_REFLECTION_MODEL,
        model_ids: Sequence[str] = (DEFAULT_TASK_MODEL,),
    ) -> None:
        self.reflection_model = reflection_model
        self.model_ids = tuple(dict.fromkeys([*model_ids, reflection_model]))
        self._benchmarks: dict[str, SimulatedBenchmark] = {}
        self._by_text: dict[str, Match] = {}
        self._by_id: dict[tuple[str, str], Match] = {}
        for name, (benchmark, rows) in datasets.items():
            self._benchmarks[name] = benchmark
            for row in rows:
                match = Match(benchmark, row)
                self._by_text.setdefault(benchmark.render_task(row), match)
                self._by_id[(name, row.id)] = match
                self._by_id.setdefault((row.dataset, row.id), match)
        # Longest first, so the most specific task wins the substring search.
        self._index = SubstringIndex(sorted(self._by_text, key=len, reverse=True))
        self._substring_cache: dict[str, Match | None] = {}
        seen: dict[str, FailureMode] = {}
        for benchmark in self._benchmarks.values():
            for mode in benchmark.failure_modes:
                seen.setdefault(f"{mode.name}\x00{mode.remedy}", mode)
        self._all_modes = tuple(seen.values())
        self._mode_patterns = tuple((m, re.compile(m.feedback_pattern)) for m in self._all_modes)
        self._ids = {row_id: match for (_, row_id), match in self._by_id.items()}
        self.judge = SimJudge(self._all_modes, lambda row_id: (lambda m: None if m is None else
                                                               (m.benchmark, m.row))(self._ids.get(row_id)))

    # ------------------------------------------------------------------ lookup

    @property
    def benchmarks(self) -> Mapping[str, SimulatedBenchmark]:
        return dict(self._benchmarks)

    @property
    def row_count(self) -> int:
        return len(self._by_id)

    def is_reflection(self, body: Mapping[str, Any]) -> bool:
        return body.get("model") == self.reflection_model

    def lookup(self, messages: Sequence[Mapping[str, Any]]) -> Match | None:
        """The row a request is about: exact user-message match first, then substring containment."""
        user_texts = [message_text(m) for m in messages if m.get("role") == "user"]
        for text in user_texts:
            found = self._by_text.get(text)
            if found is not None:
                return found
        for text in user_texts:
            found = self._contained(text)
            if found is not None:
                return found
        return None

    def _contained(self, text: str) -> Match | None:
        if text in self._substring_cache:
            return self._substring_cache[text]
        task_text = self._index.first_contained(text)
        found = None if task_text is None else self._by_text[task_text]
        if len(self._substring_cache) > 4096:
            self._substring_cache.clear()
        self._substring_cache[text] = found
        return found

    def _benchmark_for(self, row: Row) -> SimulatedBenchmark:
        match = self._by_id.get((row.dataset, row.id))
        if match is not None:
            return match.benchmark
        if row.dataset in self._benchmarks:
            return self._benchmarks[row.dataset]
        raise KeyError(f"row {row.id!r} of dataset {row.dataset!r} is not loaded in this policy")

    # ------------------------------------------------------------------ accuracy function

    def expected_mode(self, row: Row, system_prompt: str, seed: int) -> str | None:
        """The failure mode the answering reply for (row, system prompt, seed) exhibits; None = correct."""
        benchmark = self._benchmark_for(row)
        lowered = system_prompt.lower()
        for mode in benchmark.failure_modes:
            if mode.remedy.lower() in lowered:
                continue
            if mode_draw(row.id, seed, mode.name) < mode.rate:
                return mode.name
        return None

    # ------------------------------------------------------------------ decisions

    def decide(self, body: Mapping[str, Any], match: Match | None | bool = False) -> Decision:
        """Decide the reply for a request body. Pass `match` when already looked up (None = no row)."""
        messages = body.get("messages") or []
        if self.is_reflection(body):
            return Decision("reflection", SimReply(content=self.reflect(messages)))
        judged = all_text(messages)
        if judge_kind(judged) is not None:
            return Decision("judge", SimReply(content=self.judge.reply(judged)))
        speaker = speaker_choice(messages)
        if speaker is not None:
            return Decision("speaker", SimReply(content=speaker))
        delegates = [name for name in offered_tool_names(body) if name.startswith("delegate_to_")]
        if delegates:
            found = self.lookup(messages) if match is False else match
            if isinstance(found, Match):
                return self._manage(body, messages, found, delegates)
        if messages and messages[-1].get("role") == "tool":
            found = self.lookup(messages) if match is False else match
            row_id = found.row.id if isinstance(found, Match) else None
            return Decision("tool_followup", SimReply(content=TOOL_FOLLOWUP_TEXT), row_id=row_id)
        found = self.lookup(messages) if match is False else match
        if not isinstance(found, Match):
            return Decision("no_match", SimReply(content=NO_MATCH_TEXT))
        row = found.row
        system_prompt = system_prompt_of(messages)
        if CONTRACT_MARKER not in system_prompt:
            note = (f"Analysis note (simulated) for task {row.id}: the task was read; key facts and constraints "
                    "are passed on to the answering agent.")
            return Decision("analysis", SimReply(content=note), row_id=row.id)
        seed = request_seed_of(body)
        mode = self.expected_mode(row, system_prompt, seed)
        reply = found.benchmark.simulate(row, mode, reply_rng(row.id, seed))
        return Decision("answer", reply, row_id=row.id, mode=mode)

    def _manage(self, body: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], found: Match,
                delegates: list[str]) -> Decision:
        row = found.row
        delegated = any(str(call.get("function", {}).get("name", "")).startswith("delegate_to_")
                        for m in messages if m.get("role") == "assistant" for call in (m.get("tool_calls") or []))
        if not delegated:
            call = {"name": delegates[0], "arguments": {"task": f"Work on task {row.id} and report back."}}
            return Decision("delegate", SimReply(content=None, tool_calls=(call,)), row_id=row.id)
        seed = request_seed_of(body)
        mode = self.expected_mode(row, system_prompt_of(messages), seed)
        reply = found.benchmark.simulate(row, mode, reply_rng(row.id, seed))
        return Decision("answer", SimReply(content=f"{reply.content or ''}\nTERMINATE", tool_calls=()),
                        row_id=row.id, mode=mode)

    def reflect(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The simulated reflection model: current instruction + remedies of the modes the feedback names."""
        text = all_text(messages)
        found = _INSTRUCTION_RE.search(text) or _FENCE_RE.search(text)
        instruction = found.group(1).strip("\n") if found else ""
        for mode, pattern in self._mode_patterns:
            if pattern.search(text) and mode.remedy.lower() not in instruction.lower():
                instruction = f"{instruction.rstrip()}\n{mode.remedy}" if instruction.strip() else mode.remedy
        return f"```\n{instruction}\n```"

    # ------------------------------------------------------------------ rendering

    def respond(self, body: Mapping[str, Any], match: Match | None | bool = False) -> dict[str, Any]:
        """The full chat.completion JSON body for a request."""
        return self.render(body, self.decide(body, match))

    def render(self, body: Mapping[str, Any], decision: Decision, key: str | None = None) -> dict[str, Any]:
        """Render a decision as a chat.completion body. `key` = the request's logical key if already known."""
        messages = body.get("messages") or []
        requested_model = str(body.get("model") or "")
        ident = key if key is not None else request_key(body)
        reply = decision.reply
        tool_calls = reply.tool_calls if offers_tools(body) else ()
        content = reply.content if (reply.content is not None or tool_calls) else ""
        message: dict[str, Any] = {"role": "assistant", "content": content}
        completion_text = content or ""
        if tool_calls:
            calls = []
            for i, call in enumerate(tool_calls):
                arguments = call.get("arguments", {})
                if not isinstance(arguments, str):
                    arguments = canonical_json(arguments)
                calls.append({"id": f"call_{sha256_hex(f'{ident}|{i}')[:24]}", "type": "function",
                              "function": {"name": str(call.get("name", "")), "arguments": arguments}})
                completion_text += str(call.get("name", "")) + arguments
            message["tool_calls"] = calls
        prompt_tokens = len(all_text(messages)) // 4
        completion_tokens = max(1, len(completion_text) // 4)
        return {
            "id": f"chatcmpl-sim-{ident[:24]}",
            "object": "chat.completion",
            "created": CREATED,
            "model": f"simulated/{requested_model}",
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if tool_calls else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "simulated": True,
            "simulated_note": SIMULATED_NOTE,
        }

    def models_body(self, max_model_len: int | None = None) -> dict[str, Any]:
        """GET /v1/models; with `max_model_len`, each model reports that context window (vLLM's field)."""
        window = {} if max_model_len is None else {"max_model_len": max_model_len}
        return {
            "object": "list",
            "data": [{"id": mid, "object": "model", "created": CREATED, "owned_by": "mpb-simulated-endpoint",
                      **window} for mid in self.model_ids],
            "simulated": True,
            "simulated_note": SIMULATED_NOTE,
        }

    def failure_modes(self) -> Iterable[FailureMode]:
        return self._all_modes
