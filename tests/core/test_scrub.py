"""core.scrub: secret values and credential-shaped strings never survive; ordinary text does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
import pytest

from core.scrub import REDACTED, cap, is_secret_name, scrub, scrub_capped, secret_values

ENV = {"OPENAI_API_KEY": "sk-proj-abcdefghijklmnop1234", "REFLECTION_API_KEY": "reflect-key-value-42",
       "HF_TOKEN": "plainvalue9876", "DB_PASSWORD": "hunter2hunter2", "MY_SECRET": "shhh-it-is-secret",
       "PATH": "/usr/bin:/bin", "SHORT_TOKEN": "abc", "HOME": "/root"}


def test_secret_names_and_values():
    assert all(is_secret_name(n) for n in ("OPENAI_API_KEY", "REFLECTION_API_KEY", "HF_TOKEN", "X_SECRET",
                                           "DB_PASSWORD", "GH_AUTH", "apikey"))
    assert not any(is_secret_name(n) for n in ("PATH", "HOME", "TOKENIZERS_PARALLELISM", "KEYBOARD"))
    values = secret_values(ENV)
    assert set(values) == {"sk-proj-abcdefghijklmnop1234", "reflect-key-value-42", "plainvalue9876",
                           "hunter2hunter2", "shhh-it-is-secret"}
    assert [len(v) for v in values] == sorted((len(v) for v in values), reverse=True)


def test_values_of_the_engine_secrets_are_replaced_wherever_they_appear():
    text = "env: plainvalue9876; pw=hunter2hunter2, key reflect-key-value-42 and /usr/bin:/bin stays"
    out = scrub(text, secret_values(ENV))
    assert "plainvalue9876" not in out and "hunter2hunter2" not in out and "reflect-key-value-42" not in out
    assert out.count(REDACTED) == 3 and "/usr/bin:/bin stays" in out


def test_credential_shapes_are_replaced_without_knowing_the_value():
    shaped = ["sk-" + "a" * 40, "sk-proj-" + "B1" * 20, "sk-ant-api03-" + "x" * 30, "Bearer abc.def-ghi_jkl",
              "bearer " + "Z" * 20, "hf_" + "q" * 34, "ghp_" + "r" * 36, "github_pat_" + "s" * 30,
              "xoxb-" + "1" * 20, "AKIA" + "ABCDEFGHIJKLMNOP", "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4",
              "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"]
    for secret in shaped:
        out = scrub(f"prefix {secret} suffix")
        assert secret not in out and REDACTED in out and out.startswith("prefix") and out.endswith("suffix")


def test_ordinary_program_output_is_left_alone():
    for text in ("Wrong answer on test 2: expected '5', got '6'", "task-list sk- x", "ask-me-anything 12", "task-specific-instructions-here",
                 "Traceback (most recent call last):\n  File \"main.py\", line 3", "hf_ too short", "AKIA"):
        assert scrub(text, secret_values(ENV)) == text


def test_cap_counts_what_was_cut_and_scrub_happens_before_the_cut():
    assert cap("abcdef", 3) == "abc... [3 more characters cut]" and cap("abc", 3) == "abc"
    secret = "sk-" + "k" * 40
    out = scrub_capped("x" * 9 + "=" + secret, 20)
    assert "kkkkk" not in out and out.startswith("x" * 9 + "=" + REDACTED[:10])


@pytest.mark.slow
@given(st.text(), st.sampled_from(sorted(secret_values(ENV))), st.text())
def test_a_secret_value_never_survives_whatever_surrounds_it(before, secret, after):
    assert secret not in scrub(before + secret + after, secret_values(ENV))
