"""The simulated model as a group chat's speaker selector (AutoGen's SelectorGroupChat, topologies/frameworks/autogen.py).

AutoGen's model-based selector sends one prompt holding the role list, the conversation and the sentence "select
the next role from ['a', 'b'] to play". The simulated model answers with the candidate named first in the latest
message (a manager's "caller takes the next turn" names its pick), else the one named last anywhere in the
conversation, else the first candidate: a pure function of the request text, like every rule of the policy.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from engine.sim.request_text import message_text

_ASK = re.compile(r"select the next role from (\[[^\]\n]*\]) to play")
_SOURCE_LABEL = re.compile(r"(?m)^\w+: ")


def _candidates(listing: str) -> list[str]:
    try:
        names = ast.literal_eval(listing)
    except (ValueError, SyntaxError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _mentions(name: str, text: str) -> list[int]:
    return [m.start() for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text)]


def speaker_choice(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The simulated selector's pick, or None when the request is not a speaker-selection prompt."""
    for message in messages:
        text = message_text(message)
        asks = list(_ASK.finditer(text))
        if not asks:
            continue
        candidates = _candidates(asks[-1].group(1))
        if not candidates:
            return None
        # the conversation sits between the first and the last ask (AutoGen states the ask before and after it)
        history = text[asks[0].end():asks[-1].start()] if len(asks) > 1 else text
        labels = list(_SOURCE_LABEL.finditer(history))
        latest = history[labels[-1].end():] if labels else history
        first = {name: min(_mentions(name, latest), default=len(latest)) for name in candidates}
        named = min(candidates, key=lambda name: first[name])
        if first[named] < len(latest):
            return named
        anywhere = {name: max(_mentions(name, _SOURCE_LABEL.sub("", history)), default=-1) for name in candidates}
        named = max(candidates, key=lambda name: anywhere[name])
        return named if anywhere[named] >= 0 else candidates[0]
    return None
