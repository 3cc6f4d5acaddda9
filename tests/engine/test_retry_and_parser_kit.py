"""engine/retry.py's loop end and the one parser kit (engine/args.py) under every command that parses."""

from __future__ import annotations

import anyio
import pytest

from core.errors import InfrastructureError, UsageError
from engine.aggregate.cli import main as aggregate_main
from engine.cards.cli import main as card_main
from engine.args import ParseError
from engine.cli.sandbox_cmd import main as sandbox_main
from engine.retry import RetryPolicy, retrying

NO_WAIT = RetryPolicy(base_delay=0.0, honour_retry_after=False)


async def attempts_of(fail: type[BaseException], *, reraise_last: bool) -> list[int]:
    seen: list[int] = []
    async for attempt in retrying(NO_WAIT, "k", 3, InfrastructureError, reraise_last=reraise_last):
        with attempt:
            seen.append(attempt.retry_state.attempt_number)
            raise fail("down")
    return seen


def test_the_last_attempts_error_ends_the_loop_quietly_only_when_asked():
    assert anyio.run(lambda: attempts_of(InfrastructureError, reraise_last=False)) == [1, 2, 3]
    with pytest.raises(InfrastructureError, match="down"):
        anyio.run(lambda: attempts_of(InfrastructureError, reraise_last=True))
    with pytest.raises(ValueError):  # not retryable: propagates at once, whatever reraise_last says
        anyio.run(lambda: attempts_of(ValueError, reraise_last=False))


def test_sandbox_refuses_an_abbreviated_option_like_every_command():
    with pytest.raises(ParseError) as caught:
        sandbox_main(["run", "prog.py", "--lim", "apps"])
    assert isinstance(caught.value, UsageError) and "unrecognized arguments: --lim" in str(caught.value)


def test_aggregate_and_card_word_their_parse_errors_as_before(capsys):
    assert aggregate_main(["--boot", "5", "x"]) == 2
    assert capsys.readouterr().err.startswith("aggregate: error: ")
    assert card_main(["export", "x", "--out", "y", "--zi"]) == 2
    err = capsys.readouterr().err
    assert err == "python -m engine card: error: unrecognized arguments: --zi\n"
