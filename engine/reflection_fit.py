"""Fit a model client's request to the endpoint's context window (issue W item 4), the last resort after the
methods' own per-section caps (protocol 8.1-8.4: GEPA's LCB compaction, MASPO's trace caps, MAPRO's transcripts).

Only when the endpoint reported its context window (vLLM's `max_model_len` in GET /v1/models, recorded on the
checked endpoint by the start-up check): without one the body is sent exactly as built, so the recorded request
keys of existing jobs are unchanged; with one, a body that already fits is unchanged too.

Token estimate (no tokenizer on the engine's side, and it must never under-count): `ceil(utf8_bytes / 3)` per
message plus MESSAGE_OVERHEAD tokens per message and TEMPLATE_OVERHEAD for the chat template. Byte-level BPE
tokenizers average about 4 bytes per token on English and code, so /3 over-counts by about a third there; a CJK
character is 3 bytes and usually one token, so it is counted about right, never less.

When prompt + max_tokens does not fit:
1. if the prompt leaves fewer than the floor for the answer (`min(MIN_OUTPUT_TOKENS, max_tokens asked)`), the
   longest blank-line-separated blocks of the messages are cut head+tail (a marker says how much) until it does,
   the longest first and never below MIN_BLOCK_CHARS;
2. `max_tokens` becomes what is left of the window (never below the floor);
3. if the prompt still cannot leave the floor, nothing is sent: the call is a `context_length_exceeded` failure
   (core.errors.BadRequestError), counted like one the endpoint answered.
Pure functions of values: a resumed job fits the same way and replays the same recorded keys.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MESSAGE_OVERHEAD = 8
TEMPLATE_OVERHEAD = 16
MIN_OUTPUT_TOKENS = 1024
MIN_BLOCK_CHARS = 200
BYTES_PER_TOKEN = 3
MARKER = "\n[... {n} characters cut to fit the reflection endpoint's context ...]\n"


def estimate_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """A conservative (over-counting) token count of a chat prompt; see the module docstring."""
    return TEMPLATE_OVERHEAD + sum(
        MESSAGE_OVERHEAD + math.ceil(len(str(m.get("content") or "").encode("utf-8")) / BYTES_PER_TOKEN)
        for m in messages)


@dataclass(frozen=True)
class Fitted:
    messages: list[dict[str, str]]
    max_tokens: int
    trimmed_chars: int  # characters cut from the prompt (0: the prompt is as the method built it)
    fits: bool  # False: even the trimmed prompt leaves less than the floor; not to be sent


def head_tail(text: str, length: int) -> str:
    """`text` cut to about `length` characters, keeping its head and tail around a marker."""
    cut = len(text) - length
    if cut <= 0:
        return text
    marker = MARKER.format(n=cut + len(MARKER.format(n=cut)))
    keep = max(0, length - len(marker))
    head = keep - keep // 2
    return text[:head] + marker + (text[len(text) - keep // 2:] if keep // 2 else "")


def _trim(messages: list[dict[str, str]], excess_chars: int) -> int:
    """Cut `excess_chars` characters (at least) from the longest blocks, in place; returns the characters cut."""
    blocks = [str(m.get("content") or "").split("\n\n") for m in messages]
    cut_total = 0
    while excess_chars > 0:
        sizes = [(len(b), i, j) for i, bs in enumerate(blocks) for j, b in enumerate(bs)]
        longest, i, j = max(sizes)
        second = max((s for s, a, b in sizes if (a, b) != (i, j)), default=0)
        if second < longest:  # down to the next longest at most (water-filling), so the longest go first
            target = max(MIN_BLOCK_CHARS, second, longest - excess_chars)
        else:  # tied: share the cut among the tied blocks
            ties = sum(1 for s, _, _ in sizes if s == longest)
            target = max(MIN_BLOCK_CHARS, longest - math.ceil(excess_chars / ties))
        if target >= longest:
            break  # nothing left to cut
        new = head_tail(blocks[i][j], target)
        cut = longest - len(new)
        if cut <= 0:
            break
        blocks[i][j] = new
        cut_total += cut
        excess_chars -= cut
    for m, bs in zip(messages, blocks):
        if m.get("content") is not None:
            m["content"] = "\n\n".join(bs)
    return cut_total


def fit(messages: Sequence[Mapping[str, str]], max_tokens: int, max_model_len: int | None) -> Fitted:
    """The messages and max_tokens to send to an endpoint of `max_model_len` tokens (None: unknown, unchanged)."""
    msgs = [dict(m) for m in messages]
    if max_model_len is None or estimate_tokens(msgs) + max_tokens <= max_model_len:
        return Fitted(msgs, max_tokens, 0, True)
    floor = min(MIN_OUTPUT_TOKENS, max_tokens)
    trimmed = 0
    over = estimate_tokens(msgs) + floor - max_model_len
    if over > 0:  # bytes >= characters: cutting this many characters removes at least `over` tokens' bytes
        trimmed = _trim(msgs, over * BYTES_PER_TOKEN)
    room = max_model_len - estimate_tokens(msgs)
    return Fitted(msgs, min(max_tokens, room), trimmed, room >= floor)
