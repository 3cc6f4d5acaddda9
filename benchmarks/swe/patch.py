"""The SWE protocol metric: the structural patch check (protocol-v1 §5.7 swe: "structural: unified diff with header
+ >=1 changed line; not applied, no tests"; §10 SWE: "Patch = `git diff HEAD` of the checkout (not the fenced
diff)").

Which text is checked: the answering agent's checkout diff (`AgentOutput.metadata["checkout_diff"]`, the
`git diff HEAD` a runtime with repository tools records) when it is non-empty; otherwise the final message.

Extraction, on that text after the last "</think>" (if any):
  1. the LAST fenced block (```` ``` ````, ```` ```diff ````, ```` ```patch ````; the label is optional) whose body
     contains a diff header line, stripped;
  2. else, from the first diff header line of the text to its end (an unfenced diff, such as `git diff` output);
  3. else there is no patch.
A diff header line is one starting with "diff --git", "--- a/", "+++ b/" or "@@ " ("---"/"+++" may be followed by
any whitespace before a/ b/).
The patch passes when it has a header line and at least one changed line: a line starting with "+" that is not
"+++", or with "-" that is not "---". Nothing is applied and no test runs.

Decision (issue 35 item 8; the spec's "unified diff with header + >=1 changed line" leaves both open), taken from
the [v1] fork's structural scorer (optimizers/bridge/datasets/swe.py at 6aaae89: the same header pattern, "@@ "
included, and the same changed-line test), which produced the protocol's SWE numbers:
  - "header" is any diff header line, a hunk header "@@ " included: a hunk without a "diff --git" / "---" / "+++"
    file header passes (the fork's pattern accepts it; a file-less hunk is still a unified-diff hunk);
  - a line is judged by its prefix only: "+++i;" (an added "++i;") is not counted as a changed line, nor is
    "---x" (a removed "--x"), exactly as the fork's "+ not +++" / "- not ---" test does. A patch whose only changes
    look like that fails as `no_changes`; `git diff HEAD` output with any other changed line passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_THINK_END = "</think>"
_BLOCK = re.compile(r"```(?:diff|patch)?\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_HEADER = re.compile(r"^(?:diff --git|---\s+a/|\+\+\+\s+b/|@@ )", re.MULTILINE)


@dataclass(frozen=True)
class PatchCheck:
    ok: bool
    problem: str | None  # "no_diff_block" | "missing_header" | "no_changes"
    feedback: str
    patch: str | None
    files: int = 0
    added: int = 0
    removed: int = 0
    source: str = "final_message"  # or "checkout_diff"


def _after_thinking(text: str) -> str:
    idx = text.lower().rfind(_THINK_END)
    if idx >= 0:
        text = text[idx + len(_THINK_END):]
    return text.strip()


def extract_patch(text: str | None) -> str | None:
    """The patch of a text by the protocol's extraction rule (module docstring); None when there is none."""
    body = _after_thinking(text or "")
    for block in reversed(_BLOCK.findall(body)):
        if _HEADER.search(block):
            return str(block).strip()
    match = _HEADER.search(body)
    return body[match.start():].strip() if match else None


def _changed(patch: str) -> tuple[int, int]:
    added = sum(1 for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in patch.splitlines() if line.startswith("-") and not line.startswith("---"))
    return added, removed


def check_patch(text: str | None, source: str = "final_message") -> PatchCheck:
    patch = extract_patch(text)
    if patch is None:
        if _BLOCK.search(_after_thinking(text or "")):
            return PatchCheck(False, "missing_header", "Diff has no file header: no 'diff --git', '--- a/<path>', "
                              "'+++ b/<path>' or '@@ ' line in the answer's fenced blocks.", None, source=source)
        return PatchCheck(False, "no_diff_block", "No fenced diff block and no unified diff found in the answer.",
                          None, source=source)
    added, removed = _changed(patch)
    if not added and not removed:
        return PatchCheck(False, "no_changes", "Diff changes no lines (no '+' or '-' lines besides the '---'/'+++' "
                                               "headers).", patch, source=source)
    files = sum(1 for line in patch.splitlines() if line.startswith("+++"))
    return PatchCheck(True, None, f"Patch is a structural unified diff (+{added}/-{removed} lines); structural "
                                  "check only, not applied or tested.", patch, files=files, added=added,
                      removed=removed, source=source)


def check_output(text: str | None, metadata: dict[str, Any]) -> PatchCheck:
    """The structural check on the checkout diff when the runtime recorded a non-empty one, else on the text."""
    checkout = metadata.get("checkout_diff")
    if isinstance(checkout, str) and checkout.strip():
        return check_patch(checkout, source="checkout_diff")
    return check_patch(text)


def normalize_patch(patch: str | None) -> str | None:
    if patch is None:
        return None
    text = "\n".join(line.rstrip() for line in patch.splitlines() if line.strip())
    return text or None
