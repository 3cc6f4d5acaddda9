"""HTTP clients for a framework's agents to reach the recording gateway on 127.0.0.1.

An OpenAI client builds its own httpx client, and each one loads the system's CA bundle into a fresh TLS context
(about 60-110 ms of CPU each here); a rollout of a 4-agent framework runtime creates 4-8 of them. The gateway is plain
HTTP on loopback, so every client shares one default (verifying) TLS context built once per process instead: the
same behaviour at well under a millisecond per client.
"""

from __future__ import annotations

import ssl
from functools import cache

import openai


@cache
def shared_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


def sync_http_client() -> openai.DefaultHttpxClient:
    """openai's default sync httpx client (its timeouts, limits and redirects) on the shared TLS context."""
    return openai.DefaultHttpxClient(verify=shared_tls())


def async_http_client() -> openai.DefaultAsyncHttpxClient:
    """openai's default async httpx client on the shared TLS context."""
    return openai.DefaultAsyncHttpxClient(verify=shared_tls())
