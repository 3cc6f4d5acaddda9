"""LiveCodeBench (code_generation_lite) as a core.benchmark.Benchmark."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from core.communication import ReportVocabulary
from core.models import Row

from benchmarks.lcb import loader, scorer
from benchmarks.sandbox.codebench import CodeGenBenchmark
from benchmarks.sandbox.limits import SandboxLimits
from benchmarks.sandbox.suite import TestCase

PACKAGE_DIR = Path(__file__).parent

STDIN_FORMAT = (
    "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test "
    "on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program "
    "runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n# YOUR CODE HERE\n```"
)
FUNCTIONAL_FORMAT = ("### Format: You will use the following starter code to write the solution to the problem and "
                     "enclose your code within delimiters.\n```python\n{starter}\n```")


class LCBBenchmark(CodeGenBenchmark):
    name = "lcb"
    package_dir = PACKAGE_DIR
    scorer_id = "lcb:protocol:v2"
    report_vocabulary = ReportVocabulary(
        semi_tags=("APPROACH", "COMPLEXITY", "EDGE_CASES", "CODE_STATUS"),
        payload_fields=("approach", "complexity", "edge_cases", "tests", "code_status"))
    protocol_tests = 3
    runner_tests = None  # all private tests

    def __init__(self, limits: SandboxLimits | None = None):
        self.limits = limits or scorer.default_limits()

    def load_rows(self, ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        task = row.task
        if task["mode"] == "functional":
            fmt = FUNCTIONAL_FORMAT.format(starter=task["starter_code"].rstrip())
        else:
            fmt = STDIN_FORMAT
        question = task["question_content"].strip()
        return f"### Question:\n{question}\n\n{fmt}\n\n### Answer: (use the provided format with backticks)\n"

    def cases(self, row: Row, code: str, max_tests: int | None) -> list[TestCase]:
        return scorer.build_cases(row, code, max_tests)

    def reference_program(self, row: Row) -> str:
        ref = row.gold.get("reference_solution")
        return (ref.rstrip("\n") + "\n") if ref else scorer.lookup_program(row)

    def wrong_program(self, row: Row) -> str:
        return scorer.wrong_program(row)

    def crashing_program(self, row: Row) -> str:
        return scorer.crashing_program(row)


BENCHMARK = LCBBenchmark()
