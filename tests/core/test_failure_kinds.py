"""protocol-v1 §6: optimization failure kinds and which of them stop the job."""

from __future__ import annotations

import pytest

from core.errors import (BadRequestError, BudgetError, ContractError, EndpointStatusError, EndpointTimeout,
                         InfrastructureInvalidError, ScorerError, UsageError)
from core.models import FailureKind


@pytest.mark.parametrize("error,open_slots,kind", [
    (InfrastructureInvalidError("endpoints keep failing"), 0, FailureKind.INFRASTRUCTURE_INVALID),
    (EndpointStatusError("503", status_code=503), 0, FailureKind.INFRASTRUCTURE_INVALID),
    (EndpointTimeout("read timeout"), 0, FailureKind.INFRASTRUCTURE_INVALID),
    (BadRequestError("400"), 0, FailureKind.INFRASTRUCTURE_INVALID),
    (ContractError("result does not match the job identity"), 0, FailureKind.CONTRACT_FAILURE),
    (BudgetError("over-commit"), 0, FailureKind.CONTRACT_FAILURE),
    (ScorerError("scorer raised"), 0, FailureKind.PROGRAM_FAILURE),
    (UsageError("bad flag"), 0, FailureKind.PROGRAM_FAILURE),
    (ContractError("x"), 2, FailureKind.AMBIGUOUS_EXTERNAL),
    (InfrastructureInvalidError("x"), 1, FailureKind.AMBIGUOUS_EXTERNAL),
])
def test_failure_kind_of_engine_errors(error, open_slots, kind):
    assert FailureKind.of(error.kind, open_slots) is kind
    assert kind.reportable == (kind is FailureKind.INFRASTRUCTURE_INVALID)


def test_foreign_exceptions_are_program_failures():
    assert FailureKind.of(type(KeyError("k")).__name__, 0) is FailureKind.PROGRAM_FAILURE
    assert FailureKind.of("KeyError", 3) is FailureKind.AMBIGUOUS_EXTERNAL
    assert {k.value for k in FailureKind} == {"infrastructure_invalid", "contract_failure", "program_failure",
                                              "ambiguous_external"}
