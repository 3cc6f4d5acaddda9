"""Shared shape of the code-generation benchmarks (LCB, APPS): extraction, scoring over sandboxed tests,
voting key, output contracts, failure modes and simulated replies. Each dataset supplies its rows, prompt and
`cases(row, code, max_tests)`.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

from benchmarks.base import DatasetBenchmark
from benchmarks.sandbox.codeblocks import extract_python, normalize_program
from benchmarks.sandbox.limits import SandboxLimits
from benchmarks.sandbox.suite import SuiteOutcome, TestCase, run_suite_async, run_suite_sync
from benchmarks.tools.python_exec import PYTHON_EXEC_TOOL, python_exec_async

CODE_CONTRACT_V1 = (
    "PROTECTED FINAL OUTPUT CONTRACT: end your final answer with exactly one fenced ```python code block that "
    "contains the complete solution program. Nothing after the block."
)
CODE_CONTRACT_V2 = (
    "PROTECTED FINAL OUTPUT CONTRACT (v2): your final message must end with exactly one fenced code block "
    "labelled python (```python ... ```) holding the complete, self-contained solution. {mode_note} Do not put "
    "example usage, tests or prose inside the block, do not split the solution over several blocks, and write "
    "nothing after the closing fence. Code first: if you reason, keep it short and before the block."
)
MODE_NOTE = ("For stdin problems read all input from standard input and print the answer to standard output; for "
             "problems with starter code keep the given class and method signature.")

CODE_FIRST_NUDGE = ("Code first: write the complete solution program as the fenced ```python block right away; keep "
                    "any reasoning to a few lines before it and never end without the block.")

CODE_FAILURE_MODES: tuple[FailureMode, ...] = (
    FailureMode("no_code_block", r"No fenced python code block",
                "Always end the answer with exactly one fenced ```python code block containing the full program.",
                0.2),
    FailureMode("syntax_error", r"Syntax error",
                "Re-read the final program for syntax errors (balanced brackets, colons, indentation) before "
                "answering.", 0.15),
    FailureMode("wrong_answer", r"Wrong answer on test \d+",
                "Trace the examples from the statement through the program and check edge cases before answering.",
                0.3),
    FailureMode("runtime_error", r"Runtime error on test \d+",
                "Parse the input exactly as specified and guard against index errors, empty input and recursion "
                "depth.", 0.2),
)


def _score_from(outcome: SuiteOutcome, protocol_tests: int) -> Score:
    return Score(value=1.0 if outcome.passed else 0.0, feedback=outcome.feedback,
                 metadata={"kind": outcome.kind, "failed_test": outcome.failed_test, "tests_run": outcome.tests_run,
                           "tests_total": outcome.tests_total, "rule_tests": protocol_tests})


class CodeGenBenchmark(DatasetBenchmark):
    """Base for LCB and APPS. Subclasses set name, scorer_id, package_dir, protocol_tests, runner_tests, limits
    and implement `cases`, `render_task`, `load_rows` and `reference_program`."""

    answer_format = "one fenced ```python code block with the complete program"
    contracts = {1: CODE_CONTRACT_V1, 2: CODE_CONTRACT_V2.format(mode_note=MODE_NOTE)}
    executes_tools = True  # python_exec
    runs_model_code = True  # scored in the sandbox jail
    failure_modes: tuple[FailureMode, ...] = CODE_FAILURE_MODES
    protocol_tests: int = 3
    format_nudge = CODE_FIRST_NUDGE  # section 9: the bridge re-attaches it to coders in jobs
    nudge_roles = ("coder",)
    independent_wall_clock_s = 180.0  # section 2.2: per-row wall-clock cap of an Independent replica
    runner_tests: int | None = None  # None = all tests
    limits: SandboxLimits = SandboxLimits()

    # -- to implement -------------------------------------------------------------------------------------
    def cases(self, row: Row, code: str, max_tests: int | None) -> list[TestCase]:
        raise NotImplementedError

    def reference_program(self, row: Row) -> str:
        raise NotImplementedError

    def wrong_program(self, row: Row) -> str:
        raise NotImplementedError

    def crashing_program(self, row: Row) -> str:
        raise NotImplementedError

    # -- protocol -----------------------------------------------------------------------------------------
    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        """Section 10: `python_exec(code, stdin)`, a 10 s sandboxed run (public tests are not shown)."""
        return [PYTHON_EXEC_TOOL]

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        if name != "python_exec":
            return f"error: unknown tool {name!r}; the only tool is python_exec"
        args = arguments if isinstance(arguments, dict) else {}
        code, stdin = args.get("code"), args.get("stdin", "")
        if not isinstance(code, str) or not isinstance(stdin, str):
            return "error: python_exec needs a string 'code' (and an optional string 'stdin')"
        return await python_exec_async(code, stdin)

    def _prepare(self, row: Row, output: AgentOutput, max_tests: int | None) -> Score | list[TestCase]:
        extraction = extract_python(output.text)
        if extraction.code is None:
            if extraction.problem == "syntax_error":
                return Score(value=0.0, feedback=f"Syntax error: no fenced code block parses as Python "
                                                 f"({extraction.detail}).", metadata={"kind": "syntax_error"})
            return Score(value=0.0, feedback="No fenced python code block found in the answer.", malformed=True,
                         metadata={"kind": "no_code_block"})
        cases = self.cases(row, extraction.code, max_tests)
        if not cases:
            return Score(value=0.0, feedback="No tests available for this problem.", metadata={"kind": "no_tests"})
        return cases

    def score(self, row: Row, output: AgentOutput) -> Score:
        """Protocol metric: the first `protocol_tests` tests must pass (runs the sandbox synchronously)."""
        return self._score_sync(row, output, self.protocol_tests)

    async def score_async(self, row: Row, output: AgentOutput) -> Score:
        """Protocol metric with every test run off the event loop."""
        return await self._score_async(row, output, self.protocol_tests)

    def score_runner(self, row: Row, output: AgentOutput) -> Score:
        """The topology runners' rule (more tests, see runner_tests)."""
        return self._score_sync(row, output, self.runner_tests)

    async def score_runner_async(self, row: Row, output: AgentOutput) -> Score:
        return await self._score_async(row, output, self.runner_tests)

    def _score_sync(self, row: Row, output: AgentOutput, max_tests: int | None) -> Score:
        prepared = self._prepare(row, output, max_tests)
        if isinstance(prepared, Score):
            return prepared
        return _score_from(run_suite_sync(prepared, self.limits), len(prepared))

    async def _score_async(self, row: Row, output: AgentOutput, max_tests: int | None) -> Score:
        prepared = self._prepare(row, output, max_tests)
        if isinstance(prepared, Score):
            return prepared
        return _score_from(await run_suite_async(prepared, self.limits), len(prepared))

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        return normalize_program(extract_python(output.text).code)

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        intro = rng.choice(["Here is my solution.", "The approach is straightforward.", "Solution below."])
        if mode is None:
            return SimReply(f"{intro}\n\n```python\n{self.reference_program(row)}```\n")
        if mode == "no_code_block":
            return SimReply(f"{intro} I would read the input, compute the answer and print it.")
        if mode == "syntax_error":
            return SimReply(f"{intro}\n\n```python\ndef solve(:\n    return\n```\n")
        if mode == "wrong_answer":
            return SimReply(f"{intro}\n\n```python\n{self.wrong_program(row)}```\n")
        if mode == "runtime_error":
            return SimReply(f"{intro}\n\n```python\n{self.crashing_program(row)}```\n")
        raise ValueError(f"unknown failure mode {mode!r} for {self.name}")


def first(tests: Sequence[Any], max_tests: int | None) -> Sequence[Any]:
    return tests if max_tests is None else tests[:max_tests]
