"""SWE-bench Verified as a core.benchmark.Benchmark (protocol metric: structural diff check)."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Sequence

from core.communication import ReportVocabulary
from core.models import AgentOutput, Row, Score
from core.simulation import FailureMode, SimReply

from benchmarks.base import DatasetBenchmark
from benchmarks.swe import harness, loader, repo_tools, tool_jail
from benchmarks.swe.patch import check_output, normalize_patch
from benchmarks.swe.workspace import RepoWorkspaces

PACKAGE_DIR = Path(__file__).parent

CONTRACT_V1 = ("PROTECTED FINAL OUTPUT CONTRACT: end your final answer with exactly one fenced ```diff block holding "
               "a unified diff of the repository (--- a/<path>, +++ b/<path>, @@ hunks). Nothing after the block.")
CONTRACT_V2 = ("PROTECTED FINAL OUTPUT CONTRACT (v2): your final message must end with exactly one fenced code block "
               "labelled diff (```diff ... ```) containing a unified diff against the base commit: for every changed "
               "file a '--- a/<path>' and '+++ b/<path>' header, then '@@ -start,count +start,count @@' hunks with "
               "context lines and the '+'/'-' changed lines. Paths are relative to the repository root. Do not "
               "include test changes, prose or several diff blocks; write nothing after the closing fence. Patch "
               "first: if you explain, keep it short and before the block.")

FAILURE_MODES = (
    FailureMode("no_diff_block", r"No fenced diff block",
                "Always end with exactly one fenced ```diff block containing the unified diff.", 0.25),
    FailureMode("missing_header", r"Diff has no file header",
                "Start every file in the diff with '--- a/<path>' and '+++ b/<path>' header lines.", 0.2),
    FailureMode("no_changes", r"Diff changes no lines",
                "Make sure the diff contains the actual '+'/'-' changed lines, not only context.", 0.15),
)


PATCH_FIRST_NUDGE = ("Patch first: produce the unified diff that fixes the issue before any explanation; end with the "
                     "single fenced ```diff block and nothing after it.")


class SWEBenchmark(DatasetBenchmark):
    name = "swe"
    package_dir = PACKAGE_DIR
    contracts = {1: CONTRACT_V1, 2: CONTRACT_V2}
    scorer_id = "swe:protocol:v2"
    executes_tools = True
    prompt_contract_only = frozenset({"centralized", "sequential", "decentralized"})  # section 3: no re-rendering
    report_vocabulary = ReportVocabulary(
        semi_tags=("BUG_LOCATION", "PATCH_PLAN", "RISK_OR_REGRESSION"),
        payload_fields=("bug_location", "root_cause", "patch_plan", "regression_risk", "tests_or_checks"))
    answer_format = "one fenced ```diff block with a unified diff"
    failure_modes: tuple[FailureMode, ...] = FAILURE_MODES
    single_recursion_limit = 100  # section 2.1: LangGraph recursion limit 100 for SWE (50 model calls)
    format_nudge = PATCH_FIRST_NUDGE  # section 9: the bridge re-attaches it in jobs
    nudge_roles = ("patcher",)
    topology_tools = repo_tools.TOPOLOGY_TOOLS  # section 10: file_write for Single/Independent, else str_replace

    def __init__(self, workspaces: RepoWorkspaces | None = None) -> None:
        self.workspaces = workspaces
        # with checkouts, model-written shell commands run: the jail is required (or --unsafe-sandbox)
        self.runs_model_code = workspaces is not None

    def configure(self, options: dict[str, Any]) -> "SWEBenchmark":
        """A copy whose agents get the repository tools on clones of the mirrors in `swe_repos`."""
        repos = options.get("swe_repos")
        return SWEBenchmark(RepoWorkspaces(str(repos)) if repos else None)

    def tool_environment(self) -> dict[str, Any]:
        """Without repository checkouts the agents lack the protocol's tools: non-conformant."""
        on = self.workspaces is not None
        return {"swe_repository_tools": on, "conformant": on}

    async def call_tool(self, row: Row, name: str, arguments: Any) -> str:
        if self.workspaces is None:
            return f"error: tool {name!r} is not available (no repository checkout; pass --swe-repos)"
        return await tool_jail.call(await self.workspaces.checkout(row), name, arguments)

    async def finish_output(self, row: Row, output: AgentOutput) -> AgentOutput:
        """Section 10: the patch is `git diff HEAD` of the selected member's checkout, not the fenced diff."""
        if self.workspaces is None:
            return output
        done = self.workspaces.existing()
        if done is None:  # this member never touched the repository
            return output.model_copy(update={"metadata": {**output.metadata, "checkout_diff": ""}})
        patch, problem = await tool_jail.patch(done)
        extra = {"checkout_diff": patch, **({"checkout_diff_error": problem} if problem else {})}
        return output.model_copy(update={"metadata": {**output.metadata, **extra}})

    def load_rows(self, ids: Sequence[str], data_dir: str | os.PathLike[str] | None = None) -> list[Row]:
        return loader.load_rows(ids, data_dir)

    def render_task(self, row: Row) -> str:
        t = row.task
        hints = t.get("hints_text", "").strip()
        parts = [f"Repository: {t['repo']}", f"Base commit: {t['base_commit']}", "", "Issue:",
                 t["problem_statement"].strip()]
        if hints:
            parts += ["", "Hints:", hints]
        parts += ["", "Write a patch that resolves the issue, as a unified diff against the base commit."]
        return "\n".join(parts) + "\n"

    def native_tools(self, row: Row) -> list[dict[str, Any]]:
        if self.workspaces is None:
            return []
        return [dict(schema) for schema in repo_tools.SCHEMAS.values()]

    def score(self, row: Row, output: AgentOutput) -> Score:
        result = check_output(output.text, output.metadata)
        return Score(value=1.0 if result.ok else 0.0, feedback=result.feedback,
                     malformed=result.problem == "no_diff_block",
                     metadata={"kind": result.problem or "pass", "files": result.files, "added": result.added,
                               "removed": result.removed, "rule": "structural", "patch_source": result.source})

    async def score_async(self, row: Row, output: AgentOutput) -> Score:
        return self.score(row, output)

    def score_runner(self, row: Row, output: AgentOutput) -> Score:
        """Full SWE-bench rule in the instance image; HarnessUnavailable without Docker/swebench."""
        harness.require_harness()
        patch = check_output(output.text, output.metadata).patch  # the checkout's diff first (protocol §10)
        if patch is None:
            return self.score(row, output)
        return harness.run_harness(row, patch)

    def vote_key(self, row: Row, output: AgentOutput) -> str | None:
        return normalize_patch(check_output(output.text, output.metadata).patch)

    def simulate(self, row: Row, mode: str | None, rng: random.Random) -> SimReply:
        intro = rng.choice(["Here is the fix.", "The patch below resolves the issue.", "Proposed change:"])
        patch = row.gold["patch"].rstrip("\n")
        if mode is None:
            return SimReply(f"{intro}\n\n```diff\n{patch}\n```\n")
        if mode == "no_diff_block":
            return SimReply(f"{intro} I would change the faulty condition in the module so the issue goes away.")
        if mode == "missing_header":
            body = "\n".join(line for line in patch.splitlines()
                             if not line.startswith(("--- ", "+++ ", "diff --git", "index ", "@@")))
            return SimReply(f"{intro}\n\n```diff\n{body}\n```\n")
        if mode == "no_changes":
            body = "\n".join(line for line in patch.splitlines()
                             if line.startswith(("--- ", "+++ ", "@@", " ", "diff --git")))
            return SimReply(f"{intro}\n\n```diff\n{body}\n```\n")
        raise ValueError(f"unknown failure mode {mode!r} for swe")


BENCHMARK = SWEBenchmark()
