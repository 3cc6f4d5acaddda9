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


def strip_protected(text: str) -> str:
    """The editable part of a wrapped prompt (used to check optimizers never carry the contract)."""
    if not text.startswith(CONTRACT_MARKER):
        return text
    parts = text.split("\n---\n")
    return parts[1] if len(parts) >= 3 else text
