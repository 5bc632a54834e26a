"""The SDK request-type check every provider-server test relies on refuses what the APIs refuse."""

from __future__ import annotations

import json

import pytest

from tests.servers.sdk_request_types import sdk_problem


def _body(value: object) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": 5}]},
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "stream": True, "messages": [{"role": "robot", "content": "hi"}]},
        ),
        ("/v1/chat/completions", {"stream": True, "messages": []}),
        (
            "/v1/responses",
            {"model": "m", "stream": True, "input": [], "tools": [{"type": "function"}]},
        ),
        ("/v1/messages", {"model": "m", "stream": True, "messages": []}),
        (
            "/v1/messages",
            {
                "model": "m",
                "stream": True,
                "max_tokens": 10,
                "messages": [{"role": "user", "content": [{"type": "tool_result"}]}],
            },
        ),
    ],
)
def test_a_body_the_api_refuses_is_named(path: str, body: object) -> None:
    problem = sdk_problem(path, _body(body))
    assert problem is not None and problem.startswith(path.rsplit("/v1/", 1)[1])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            {
                "model": "m",
                "stream": True,
                "messages": [
                    {
                        "role": "assistant",
                        "content": "hi",
                        "reasoning_details": [{"type": "reasoning.text"}],
                    }
                ],
            },
        ),
        (
            "/v1/responses",
            {
                "model": "m",
                "stream": True,
                "store": False,
                "input": [{"role": "user", "content": "hi"}],
            },
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "stream": True,
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "hi"}],
            },
        ),
        ("/v1/embeddings", {"anything": True}),
    ],
)
def test_a_body_the_api_takes_passes(path: str, body: object) -> None:
    assert sdk_problem(path, _body(body)) is None
