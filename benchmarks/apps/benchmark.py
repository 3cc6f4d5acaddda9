"""APPS (`codeparrot/apps`, interview problems) as a core.benchmark.Benchmark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from core.models import Row

from benchmarks.apps import loader, scorer
from benchmarks.sandbox.codebench import CodeGenBenchmark
from benchmarks.sandbox.limits import SandboxLimits
from benchmarks.sandbox.suite import TestCase

PACKAGE_DIR = Path(__file__).parent


class APPSBenchmark(CodeGenBenchmark):
    name = "apps"
    package_dir = PACKAGE_DIR
    scorer_id = "apps:protocol:v2"
    protocol_tests = 3
    runner_tests = scorer.RUNNER_TESTS

    def __init__(self, limits: SandboxLimits | None = None):
        self.limits = limits or scorer.default_limits()

    def load_rows(self, ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        """The APPS prompt: QUESTION / starter code / format line / ANSWER."""
        task = row.task
        starter = task["starter_code"].rstrip()
        fmt = "Use Call-Based format" if task["mode"] == "call" else "Use Standard Input format"
        parts = ["QUESTION:", task["question"].strip()]
        if starter:
            parts.append(starter)
        parts += [fmt, "ANSWER:"]
        return "\n".join(parts) + "\n"

    def cases(self, row: Row, code: str, max_tests: int | None) -> list[TestCase]:
        return scorer.build_cases(row, code, max_tests)

    def reference_program(self, row: Row) -> str:
        solutions = row.gold.get("solutions") or []
        return (solutions[0].rstrip("\n") + "\n") if solutions else scorer.lookup_program(row)

    def wrong_program(self, row: Row) -> str:
        return scorer.wrong_program(row)

    def crashing_program(self, row: Row) -> str:
        return scorer.crashing_program(row)


BENCHMARK = APPSBenchmark()
