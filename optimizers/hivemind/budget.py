"""HiveMind's charging per cycle (protocol 8.5, 8.9), pure arithmetic.

A cycle evaluates C planned coalitions on k training rows and, when the reflection wrote a new lesson, the current
and the candidate bundle on the same v validation rows: C * k + 2 * v rollouts, with k = v = ROWS (5) at full size
(centralized 4-agent: 8 coalitions, 8 * 5 + 10 = 50; a 4-player game: 16 * 5 + 10 = 90). When the remainder is
smaller, both batches shrink to the largest b <= ROWS with C * b + 2 * b <= remaining, down to 1 row; a cycle that
does not fit with 1-row batches is not started (the stop `budget`). The smallest useful budget is therefore C + 2
(centralized 10, a 4-player game 18).
"""

from __future__ import annotations

ROWS = 5


def batch_rows(coalitions: int, remaining: int, rows: int = ROWS) -> int:
    """Rows per batch of the next cycle (0: it does not fit)."""
    return max(0, min(rows, remaining // (coalitions + 2)))


def cycle_cost(coalitions: int, rows: int = ROWS) -> int:
    return coalitions * rows + 2 * rows


def smallest_budget(coalitions: int) -> int:
    return cycle_cost(coalitions, 1)
