"""Every transport error class is mapped in the one translation table; HTTP statuses are classified."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from core.errors import (
    BadRequestError,
    EndpointConnectionError,
    EndpointStatusError,
    EndpointTimeout,
    InfrastructureError,
    MalformedResponseError,
)
from engine.chat.errors import (
    TRANSPORT_ERROR_MAP,
    classify_status,
    decode_body,
    parse_completion,
    translate_exception,
)


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def test_every_aiohttp_client_error_class_is_mapped():
    classes = {c for c in _subclasses(aiohttp.ClientError) if c.__module__.startswith("aiohttp")}
    unmapped = [c.__name__ for c in classes
                if not any(issubclass(c, foreign) for foreign, _ in TRANSPORT_ERROR_MAP)]
    assert unmapped == []


@pytest.mark.parametrize("exc,expected", [
    (aiohttp.ServerDisconnectedError(), EndpointConnectionError),
    (aiohttp.ClientOSError(104, "Connection reset by peer"), EndpointConnectionError),
    (aiohttp.ServerTimeoutError("read"), EndpointTimeout),
    (asyncio.TimeoutError(), EndpointTimeout),
    (ConnectionResetError("reset"), EndpointConnectionError),
    (json.JSONDecodeError("x", "doc", 0), MalformedResponseError),
    (aiohttp.ClientPayloadError("truncated"), EndpointConnectionError),
])
def test_transport_errors_translate(exc, expected):
    got = translate_exception(exc)
    assert type(got) is expected and isinstance(got, InfrastructureError)


def test_non_transport_errors_are_not_swallowed():
    with pytest.raises(TypeError):
        translate_exception(KeyError("x"))


@pytest.mark.parametrize("status,expected", [(429, EndpointStatusError), (408, EndpointStatusError),
                                             (500, EndpointStatusError), (503, EndpointStatusError),
                                             (400, BadRequestError), (422, BadRequestError)])
def test_statuses(status, expected):
    err = classify_status(status, "boom", {"Retry-After": "2"})
    assert type(err) is expected and err.status_code == status


def test_retry_after_is_read_for_429():
    assert classify_status(429, "", {"Retry-After": "1.5"}).retry_after == 1.5
    assert classify_status(429, "", {}).retry_after is None


@pytest.mark.parametrize("body", [[], {"choices": []}, {"choices": [{}]}, {"choices": "x"}, None, 7,
                                  {"choices": [{"message": {"content": 5}}]},
                                  {"choices": [{"message": {"content": ["a"]}}]},
                                  {"choices": [{"message": {"content": "x", "tool_calls": {"a": 1}}}]},
                                  {"choices": [{"message": {"content": "x"}, "finish_reason": 3}]},
                                  {"choices": [{"message": {"tool_calls": [{"function": {"name": "f",
                                                                                         "arguments": [1]}}]}}]},
                                  {"choices": [{"message": {"tool_calls": [{"function": {}}]}}]}])
def test_malformed_responses(body):
    with pytest.raises(MalformedResponseError):
        parse_completion(body)


@pytest.mark.parametrize("message", [{"content": ""}, {"content": None}, {}, {"content": "", "tool_calls": []}])
def test_empty_content_is_an_observed_reply_not_an_infrastructure_failure(message):
    """protocol-v1 5.3: a 200 with empty content is a usable (semantic_failure) observation, scored 0."""
    parsed = parse_completion({"choices": [{"message": message, "finish_reason": "length"}]})
    assert parsed["content"] == "" and parsed["tool_calls"] == [] and parsed["finish_reason"] == "length"


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"usage": {"prompt_tokens": ' + "9" * 5000 + "}}",
                                  '{"choices": [{"message": {"content": "trunc', "<html><body>OK</body></html>", "",
                                  "\ud800"])
def test_bodies_that_cannot_be_decoded_are_malformed_responses(text):
    with pytest.raises(MalformedResponseError):
        parse_completion(decode_body(text))


def test_implausible_usage_numbers_are_recorded_as_absent():
    parsed = parse_completion({"choices": [{"message": {"content": "hi"}}],
                               "usage": {"prompt_tokens": 10 ** 200, "completion_tokens": -1, "total_tokens": True}})
    assert parsed["usage"] == {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}


def test_absent_usage_stays_null():
    parsed = parse_completion({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                               "usage": {"prompt_tokens": 3}})
    assert parsed["usage"] == {"prompt_tokens": 3, "completion_tokens": None, "total_tokens": None}


def test_timeout_classes_become_timeouts_and_the_rest_connection_or_status_errors():
    for cls in {c for c in _subclasses(aiohttp.ClientError) if c.__module__.startswith("aiohttp")}:
        target = next(ours for foreign, ours in TRANSPORT_ERROR_MAP if issubclass(cls, foreign))
        if "Timeout" in cls.__name__:
            assert target is EndpointTimeout, cls
        elif issubclass(cls, aiohttp.ClientResponseError) and not issubclass(cls, aiohttp.ContentTypeError):
            assert target is EndpointStatusError, cls
        else:
            assert target in (EndpointConnectionError, MalformedResponseError), cls
