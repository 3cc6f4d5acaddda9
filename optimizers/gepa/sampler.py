"""GEPA's train minibatch order (protocol 8.1): a fresh seeded shuffle per epoch, as gepa-ai/gepa's
EpochShuffledBatchSampler."""

from __future__ import annotations

import random
from collections.abc import Sequence


class EpochShuffledSampler:
    """Train ids in a fresh seeded shuffle per epoch, padded to whole minibatches with the least-used ids."""

    def __init__(self, ids: Sequence[str], size: int, rng: random.Random):
        self.ids, self.size, self.rng = sorted(ids), size, rng
        self.order: list[str] = []
        self.pos = 0
        self.freq = {i: 0 for i in self.ids}

    def next(self) -> list[str]:
        if self.pos + self.size > len(self.order):
            order = list(self.ids)
            self.rng.shuffle(order)
            while len(order) % self.size:
                order.append(min(self.ids, key=lambda i: (self.freq[i], i)))
                self.freq[order[-1]] += 1
            self.order, self.pos = order, 0
        batch = self.order[self.pos:self.pos + self.size]
        self.pos += self.size
        for i in batch:
            self.freq[i] += 1
        return batch
