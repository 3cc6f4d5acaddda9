"""Protected output contracts (protocol-v1 section 9): attached around the editable prompt at execution time,
never part of the editable text, so optimizers can neither see-and-edit nor remove them.

Two versions: baseline runs (`python -m engine run`, the protocol's runners) attach version 1; jobs (the
protocol's optimizer bridge) attach version 2, the fuller wording, and re-attach the dataset's format nudge
(`Benchmark.format_nudge`, e.g. code-first for coders, patch-first for patchers) to the roles that write the
artifact (`nudge_roles`). A dataset's short format note (`format_note`, section 2.1) goes to answering roles under
both versions.

Layout of an answering role's system prompt:

    PROTECTED FINAL OUTPUT CONTRACT (v<N>)
    <contract text>
    [FORMAT NOTE: <note>]
    [FORMAT NUDGE: <nudge>]          (version 2 only)
    ---
    <editable prompt>
    ---
    REMINDER (protected contract): ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.benchmark import Benchmark

CONTRACT_MARKER = "PROTECTED FINAL OUTPUT CONTRACT"
REMINDER_MARKER = "REMINDER (protected contract)"
NOTE_MARKER = "FORMAT NOTE"
NUDGE_MARKER = "FORMAT NUDGE"
RUN_CONTRACT_VERSION = 1  # runners (baseline `run`)
JOB_CONTRACT_VERSION = 2  # the optimizer bridge (every request of a job)
CONTRACT_VERSIONS = (RUN_CONTRACT_VERSION, JOB_CONTRACT_VERSION)


def contract_header(version: int) -> str:
    return f"{CONTRACT_MARKER} (v{version})"


@dataclass(frozen=True)
class ContractPolicy:
    """Which contract version a topology attaches, and the dataset's notes and nudge."""

    version: int = RUN_CONTRACT_VERSION

    def __post_init__(self) -> None:
        if self.version not in CONTRACT_VERSIONS:
            raise ValueError(f"unknown output contract version {self.version!r}; known: {CONTRACT_VERSIONS}")

    def nudge_for(self, bench: Benchmark, role: str, answering: bool) -> str:
        """The format nudge (version 2 only) for an answering role or a role named like the artifact's writer
        (`nudge_roles` of the benchmark, e.g. coder / patcher)."""
        nudge = bench.format_nudge
        if self.version != JOB_CONTRACT_VERSION or not nudge:
            return ""
        writers = bench.nudge_roles
        return nudge if answering or any(w in role for w in writers) else ""

    def note_for(self, bench: Benchmark, answering: bool) -> str:
        return bench.format_note if answering else ""


def wrap_answering_prompt(editable: str, contract: str, *, version: int = RUN_CONTRACT_VERSION, note: str = "",
                          nudge: str = "") -> str:
    """Contract block (with the format note and nudge) before the editable prompt, a short reminder after it."""
    head = [contract_header(version), contract.strip()]
    if note:
        head.append(f"{NOTE_MARKER}: {note.strip()}")
    if nudge:
        head.append(f"{NUDGE_MARKER}: {nudge.strip()}")
    return (
        "\n".join(head) + f"\n---\n{editable.strip()}\n---\n"
        f"{REMINDER_MARKER}: your final message must follow the contract above exactly."
    )


def nudge_only(editable: str, nudge: str) -> str:
    """A non-answering artifact writer (e.g. a sequential coder stage): the nudge after its editable text."""
    return f"{editable.strip()}\n\n{NUDGE_MARKER}: {nudge.strip()}" if nudge else editable.strip()
