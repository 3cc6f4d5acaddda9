"""SWE protocol-metric edge cases, one row per rule of protocol-v1 §5.7 swe ("structural: unified diff with header
+ >=1 changed line; not applied, no tests") and §10 SWE-bench ("Patch = `git diff HEAD` of the checkout (not the
fenced diff)").

Every case states its expected verdict explicitly. Cross-check: the [v1] fork's structural scorer (optimizers/
bridge/datasets/swe.py at 6aaae89, the rule behind the protocol's SWE numbers) is restated below as a TEST ORACLE
(`v1_structural`, written from that code's rule: same header pattern, "@@ " included, same "+ not +++" / "- not
---" changed-line test); on every case scored from the final message the engine's verdict equals it. Issue 35 item
8 (spec-ambiguous, decided as the fork's code does): a hunk without a file header passes, "+++i;" is no changed line.
(The SWE-bench harness is the runners' rule, score_runner, tested in test_swe.py.)
"""

from __future__ import annotations

import re
from typing import NamedTuple

import pytest

from benchmarks.swe import BENCHMARK
from benchmarks.swe.patch import extract_patch
from core.models import AgentOutput

RULE = "protocol-v1 §5.7 swe: structural: unified diff with header + >=1 changed line"
HDR = RULE + " (a header line: 'diff --git', '--- a/', '+++ b/' or '@@ ')"
CHK = "protocol-v1 §10 SWE: Patch = git diff HEAD of the checkout (not the fenced diff)"

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-return 1\n+return 2\n"


ITEM8 = RULE + " (issue 35 item 8, as the [v1] fork's scorer)"


# ---------------------------------------------------------------- oracle: the [v1] fork's structural rule
_V1_BLOCK = re.compile(r"```(?:diff|patch)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_V1_HEADER = re.compile(r"^(?:diff --git|---\s+a/|\+\+\+\s+b/|@@ )", re.MULTILINE)


def v1_structural(text: str | None) -> bool:
    body = text or ""
    end = body.lower().rfind("</think>")
    body = (body[end + len("</think>"):] if end >= 0 else body).strip()
    patch = next((b.strip() for b in reversed(_V1_BLOCK.findall(body)) if _V1_HEADER.search(b)), None)
    if patch is None:
        first = _V1_HEADER.search(body)
        patch = body[first.start():].strip() if first else None
    if not patch:
        return False
    lines = patch.splitlines()
    changed = any((ln.startswith("+") and not ln.startswith("+++")) or (ln.startswith("-") and not ln.startswith("---"))
                  for ln in lines)
    return bool(_V1_HEADER.search(patch)) and changed


class Case(NamedTuple):
    text: str | None
    checkout_diff: str | None
    value: float
    kind: str  # "pass" or the problem
    cite: str


TABLE = [
    Case(f"Fix:\n```diff\n{DIFF}```", None, 1.0, "pass", RULE),
    Case(f"```\n{DIFF}```", None, 1.0, "pass", RULE + " (an unlabelled fence holds a diff too)"),
    Case(f"```patch\n{DIFF}```", None, 1.0, "pass", RULE + " (```patch fence)"),
    Case(f"Here it is:\n{DIFF}", None, 1.0, "pass", RULE + " (an unfenced diff, as git diff prints it)"),
    Case("```diff\n@@ -1 +1 @@\n-a\n+b\n```", None, 1.0, "pass", HDR + ": '@@ ' alone is a header"),
    Case("```diff\n--- a/x\n+++ b/x\n-a\n+b\n```", None, 1.0, "pass", HDR + ": no hunk header is required"),
    Case("```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n```", None, 0.0, "no_changes", RULE + " (>=1 changed line)"),
    Case("```diff\n--- a/x\n+++ b/x\n```", None, 0.0, "no_changes", RULE + " ('---'/'+++' are not changed lines)"),
    Case("```diff\n-a\n+b\n```", None, 0.0, "missing_header", HDR),
    Case("```diff\n--- x\n+++ y\n-a\n+b\n```", None, 0.0, "missing_header", HDR + " ('--- x' lacks 'a/')"),
    Case("```python\nprint(1)\n```", None, 0.0, "no_diff_block", RULE + " (a python block is no diff)"),
    Case("I would change return 1 to return 2.", None, 0.0, "no_diff_block", RULE + " (prose is no diff)"),
    Case(f"```diff\n{DIFF}```\nand\n```diff\n--- a/m.py\n+++ b/m.py\n```", None, 0.0, "no_changes",
         RULE + " (the LAST fenced block with a header is the patch)"),
    Case(f"```diff\n{DIFF}```\nSummary:\n```\nchanged one line\n```", None, 1.0, "pass",
         RULE + " (a later block without a header is not the patch)"),
    Case(f"<think>```diff\n{DIFF}```</think>I am not sure.", None, 0.0, "no_diff_block",
         RULE + " (only the text after the reasoning block counts)"),
    Case(f"<think>draft</think>\n```diff\n{DIFF}```", None, 1.0, "pass", RULE + " (text after </think>)"),
    Case("I edited the file with the tools.", DIFF, 1.0, "pass", CHK),
    Case(f"```diff\n{DIFF}```", "diff --git a/m.py b/m.py\nold mode 100644\nnew mode 100755\n", 0.0, "no_changes",
         CHK + " (the checkout's diff decides, not the fenced one)"),
    Case(f"```diff\n{DIFF}```", "", 1.0, "pass",
         CHK + " (an empty checkout diff: the runtime recorded no checkout patch, the answer's diff is checked)"),
    Case(None, None, 0.0, "no_diff_block", RULE + " (no answer)"),
    Case("```diff\n@@ -3 +3 @@\n-x = 1\n+x = 2\n```", None, 1.0, "pass", ITEM8 + ": a hunk without a file header"),
    Case("Change:\n@@ -3 +3 @@\n-x = 1\n+x = 2\n", None, 1.0, "pass", ITEM8 + ": an unfenced file-less hunk"),
    Case("```diff\n--- a/c.c\n+++ b/c.c\n@@ -1 +1 @@\n i = 0;\n+++i;\n```", None, 0.0, "no_changes",
         ITEM8 + ": '+++i;' (an added '++i;') is not counted as a changed line"),
    Case("```diff\n--- a/c.c\n+++ b/c.c\n@@ -1 +1 @@\n---i;\n i = 0;\n```", None, 0.0, "no_changes",
         ITEM8 + ": '---i;' (a removed '--i;') is not counted either"),
    Case("```diff\n--- a/c.c\n+++ b/c.c\n@@ -1 +1 @@\n-i++;\n+++i;\n```", None, 1.0, "pass",
         ITEM8 + ": the removed 'i++;' is the changed line"),
    Case("I edited c.c.", "diff --git a/c.c b/c.c\n--- a/c.c\n+++ b/c.c\n@@ -1 +1 @@\n i = 0;\n+++i;\n", 0.0,
         "no_changes", ITEM8 + " on the checkout diff (" + CHK[len("protocol-v1 "):] + ")"),
]


def test_table_is_large_enough_and_cited():
    assert len(TABLE) >= 15
    assert all(case.cite.startswith("protocol-v1 §") for case in TABLE)


@pytest.mark.parametrize("case", TABLE, ids=[f"{i}:{(c.text or '')[:30]!r}" for i, c in enumerate(TABLE)])
def test_swe_protocol_case(case: Case):
    metadata = {} if case.checkout_diff is None else {"checkout_diff": case.checkout_diff}
    score = BENCHMARK.score(None, AgentOutput(text=case.text, metadata=metadata))  # type: ignore[arg-type]
    assert score.value == case.value, (case.cite, score.feedback)
    assert score.metadata["kind"] == case.kind, case.cite
    assert score.metadata["rule"] == "structural"
    expected_source = "checkout_diff" if (case.checkout_diff or "").strip() else "final_message"
    assert score.metadata["patch_source"] == expected_source
    if expected_source == "final_message":  # cross-check: the fork's structural scorer on the same text
        assert (score.value == 1.0) == v1_structural(case.text), case.cite


def test_extracted_patch_is_the_diff_itself():
    """protocol-v1 §10 SWE: the patch handed on (vote key, harness) is the diff, stripped, not the prose."""
    assert extract_patch(f"Here it is:\n{DIFF}") == DIFF.strip()
    assert extract_patch(f"```diff\n{DIFF}```") == DIFF.strip()


def test_vote_key_reads_the_checkout_diff_first():
    """protocol-v1 §10 SWE: the patch is the checkout's diff, for voting as for scoring."""
    from benchmarks.swe.patch import normalize_patch

    prose = AgentOutput(text="I edited m.py with the tools.", metadata={"checkout_diff": DIFF})
    fenced = AgentOutput(text=f"```diff\n{DIFF}```")
    assert BENCHMARK.vote_key(None, prose) == BENCHMARK.vote_key(None, fenced) == normalize_patch(DIFF)  # type: ignore[arg-type]
    assert BENCHMARK.vote_key(None, AgentOutput(text="no patch")) is None  # type: ignore[arg-type]
