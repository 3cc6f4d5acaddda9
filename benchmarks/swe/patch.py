"""The SWE protocol metric: a structural check of the fenced unified diff (protocol-v1 5.7; not applied).

A valid answer holds a fenced ```diff (or ```patch) block with a file header (`--- ` and `+++ ` lines), at
least one `@@` hunk header and at least one changed (+/-) line inside a hunk. The last such block counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchmarks.sandbox.codeblocks import fenced_blocks

DIFF_LABELS = ("diff", "patch", "udiff")


@dataclass(frozen=True)
class PatchCheck:
    ok: bool
    problem: str | None  # "no_diff_block" | "missing_header" | "no_hunk" | "no_changes"
    feedback: str
    patch: str | None
    files: int = 0
    added: int = 0
    removed: int = 0


def extract_patch(text: str | None) -> str | None:
    blocks = fenced_blocks(text)
    labelled = [b for b in blocks if b.label in DIFF_LABELS]
    if labelled:
        return labelled[-1].body
    looks = [b for b in blocks if b.body.lstrip().startswith(("diff --git", "--- "))]
    return looks[-1].body if looks else None


def check_patch(text: str | None) -> PatchCheck:
    patch = extract_patch(text)
    if patch is None or not patch.strip():
        return PatchCheck(False, "no_diff_block", "No fenced diff block found in the answer.", None)
    lines = patch.splitlines()
    old = sum(1 for line in lines if line.startswith("--- "))
    new = sum(1 for line in lines if line.startswith("+++ "))
    if not old or not new:
        return PatchCheck(False, "missing_header", "Diff has no file header (needs '--- a/<path>' and "
                                                   "'+++ b/<path>' lines).", patch)
    if not any(line.startswith("@@") for line in lines):
        return PatchCheck(False, "no_hunk", "Diff has no hunk header ('@@ -l,n +l,n @@').", patch)
    added = removed = 0
    in_hunk = False
    for line in lines:
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith(("--- ", "+++ ", "diff --git")):
            in_hunk = False
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    if not added and not removed:
        return PatchCheck(False, "no_changes", "Diff changes no lines (no '+' or '-' lines inside a hunk).", patch)
    return PatchCheck(True, None, f"Patch is a well-formed unified diff touching {new} file(s) (+{added}/-{removed} "
                                  "lines); structural check only, not applied or tested.", patch,
                      files=new, added=added, removed=removed)


def normalize_patch(patch: str | None) -> str | None:
    if patch is None:
        return None
    text = "\n".join(line.rstrip() for line in patch.splitlines() if line.strip())
    return text or None
