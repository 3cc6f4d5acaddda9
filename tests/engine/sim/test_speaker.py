"""The simulated model as AutoGen's speaker selector (engine/sim/speaker.py, policy rule 2a)."""

from __future__ import annotations

from engine.sim.speaker import speaker_choice

ASK = "Read the following conversation. Then select the next role from {names} to play. Only return the role."
ROLES = "manager: the manager\ncaller: calls\nchecker: checks"
NAMES = "['manager', 'caller', 'checker']"


def selector_prompt(history: str, names: str = NAMES) -> list[dict[str, str]]:
    ask = ASK.format(names=names)
    text = f"You are in a role play game. The following roles are available:\n{ROLES}.\n{ask}\n\n{history}\n\n{ask}\n"
    return [{"role": "user", "content": text}]


def test_the_candidate_the_latest_message_names_first_wins():
    history = ("user: Question about a checker board\n\n"
               "manager: caller takes the next turn; its task: run it, then the checker and the manager look.")
    assert speaker_choice(selector_prompt(history)) == "caller"


def test_source_labels_are_not_picks_and_earlier_mentions_count_when_the_latest_names_nobody():
    history = "user: task\n\nchecker: looks fine\n\nmanager: I have thought about it."
    assert speaker_choice(selector_prompt(history)) == "manager"  # "checker:" labels a speaker: no one is named
    history = "user: ask the checker, then the caller\n\ncaller: done\n\nmanager: hmm."
    assert speaker_choice(selector_prompt(history)) == "caller"  # the one named last in the conversation


def test_no_mention_gives_the_first_candidate_and_other_requests_are_not_selections():
    assert speaker_choice(selector_prompt("user: task\n\nmanager: thinking.", "['caller', 'checker']")) == "caller"
    assert speaker_choice([{"role": "user", "content": "What is 2 + 2?"}]) is None
    assert speaker_choice([{"role": "system", "content": "select the next role from [oops to play"}]) is None
