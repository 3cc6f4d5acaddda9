"""A small MATH data directory in the qwedsacf/competition_math layout, read by the real loader, and the real MATH
benchmark over it with small splits (the official split manifest names rows of the real dataset, which a fixture
cannot reproduce: MATH IDs are hashes of the problem text)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.math import MathBenchmark
from benchmarks.math.loader import row_id
from core.benchmark import Splits


def problems(n: int) -> list[dict[str, str]]:
    return [{"problem": f"Compute $\\cos^2 \\theta + \\sin^2 \\theta + {k}$ for every real $\\theta$.",
             "level": "Level 5", "type": "Precalculus",
             "solution": f"Since $\\cos^2 \\theta + \\sin^2 \\theta = 1$, the value is $\\boxed{{{k + 1}}}$."}
            for k in range(n)]


class SmallMath(MathBenchmark):
    """The real MATH benchmark (loader, scorer, simulation hooks) with the given split IDs."""

    def __init__(self, ids: list[str], n_train: int, n_validation: int):
        self._small = Splits(dataset="math", train=tuple(ids[:n_train]),
                             validation=tuple(ids[n_train:n_train + n_validation]),
                             test=tuple(ids[n_train + n_validation:]), eval_ids=tuple(ids[n_train + n_validation:]),
                             source="tests/optimizers/math_layout.py")

    def splits(self) -> Splits:
        return self._small


def write_math_layout(root: Path, *, n_train: int = 12, n_validation: int = 10, n_test: int = 6
                      ) -> tuple[Path, SmallMath]:
    root.mkdir(parents=True, exist_ok=True)
    rows = problems(n_train + n_validation + n_test)
    (root / "competition_math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root, SmallMath([row_id(r["problem"]) for r in rows], n_train, n_validation)
