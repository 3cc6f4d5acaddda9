"""Protected output contracts (protocol-v1 section 9): attached around the editable prompt at execution time,
never part of the editable text, so optimizers can neither see-and-edit nor remove them."""

from __future__ import annotations

CONTRACT_MARKER = "PROTECTED FINAL OUTPUT CONTRACT"
REMINDER_MARKER = "REMINDER (protected contract)"


def wrap_answering_prompt(editable: str, contract: str) -> str:
    """Contract block before the editable prompt and a short reminder after it."""
    return (
        f"{CONTRACT_MARKER}\n{contract.strip()}\n"
        f"---\n{editable.strip()}\n---\n"
        f"{REMINDER_MARKER}: your final message must follow the contract above exactly."
    )

