"""Which known task text a request contains, without a substring test per task (part of the simulated endpoint).

The simulated policy finds the row a request is about by the rendered task text inside its user messages; a judge,
blame or later-stage prompt embeds it among other text, so an exact lookup misses and the policy falls back to
"the longest task text contained in the message". Testing every task text costs one substring search per row per
request (on bench/optimizer.py, 300 BFCL rows: about a sixth of the simulated endpoint's CPU). The index keeps, per
task text, one *interior word* (a maximal run of 4+ word characters with a non-word character on both sides inside
the text), the rarest among the texts: a message containing the text contains that word as a maximal run too, so
only the texts whose word occurs in the message (and those without an interior word) are tested, in the same
longest-first order, which gives the same answer as testing all of them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w{4,}")


def _interior_words(text: str) -> set[str]:
    return {m.group() for m in _WORD.finditer(text) if m.start() > 0 and m.end() < len(text)}


class SubstringIndex:
    def __init__(self, texts: Sequence[str]):
        """`texts` in priority order (the first contained one wins)."""
        self._texts = [t for t in texts if t]
        words = [_interior_words(t) for t in self._texts]
        frequency = Counter(w for ws in words for w in ws)
        self._by_word: dict[str, list[int]] = {}
        self._always: list[int] = []
        for i, ws in enumerate(words):
            if ws:
                key = min(ws, key=lambda w: (frequency[w], -len(w), w))
                self._by_word.setdefault(key, []).append(i)
            else:
                self._always.append(i)

    def first_contained(self, message: str) -> str | None:
        """The first of the texts (in the given order) that occurs in `message`, or None."""
        candidates = set(self._always)
        for word in set(_WORD.findall(message)):
            found = self._by_word.get(word)
            if found is not None:
                candidates.update(found)
        for i in sorted(candidates):
            if self._texts[i] in message:
                return self._texts[i]
        return None
