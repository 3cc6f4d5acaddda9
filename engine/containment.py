"""Fault containment: the one place where whatever a topology raised becomes one rollout attempt's outcome.

A topology runs agents, tools and votes, often in nested task groups, so a failure can arrive bare or wrapped in
an exception group (several agents failing at once). `attempt_failure` turns it into exactly one engine error:

* an InfrastructureError or ScorerError (the first one, depth-first) -> that error: the attempt failed;
* an engine error of another branch (ContractError, BudgetError, UsageError, ...) -> re-raised unwrapped: a
  contract break fails the job loudly, as it must;
* any other Exception from agent, tool or vote code (KeyError, RecursionError, ...) -> AgentFailure, an
  infrastructure failure that keeps its type and message for the card: it ends the attempt, never the job;
* BaseExceptions that are not Exceptions (cancellation, KeyboardInterrupt) are never touched.

The runner is the only caller and the only catcher.
"""

from __future__ import annotations

from collections.abc import Iterator

from core.errors import EngineError, InfrastructureError, ScorerError


class AgentFailure(InfrastructureError):
    """An agent, tool or vote of a topology raised something that is not an engine error."""

    kind = "agent_failure"


def leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from leaves(inner)
    else:
        yield exc


def attempt_failure(exc: Exception) -> InfrastructureError | ScorerError:
    """The attempt failure `exc` stands for; raises it instead when it must end the job."""
    found = list(leaves(exc))
    for leaf in found:
        if not isinstance(leaf, Exception):
            raise exc  # cancellation or interrupt inside a group: not ours to contain
    for leaf in found:
        if isinstance(leaf, EngineError) and not isinstance(leaf, (InfrastructureError, ScorerError)):
            raise leaf
    for leaf in found:
        if isinstance(leaf, (InfrastructureError, ScorerError)):
            return leaf
    first = found[0]
    failure = AgentFailure(f"{type(first).__name__} in topology: {str(first)[:500]}")
    failure.__cause__ = first
    return failure
