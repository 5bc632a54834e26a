"""Host profiles, client creation from policy provider entries, HTTP errors and retries."""

from __future__ import annotations

import logging
import socket
import uuid
from pathlib import Path

import pytest

from policy.configuration import ProviderConfig
from policy.hosts import PROVIDER_HOSTS
from policy.plugins import load_plugin
from policy.vocabulary import PluginOrigin, ProviderKind
from runtime.adapters import create_adapter
from runtime.adapters.anthropic import AnthropicAdapter
from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAdapter
from runtime.providers import (
    OPENAI_CHAT_COMPLETIONS,
    ProviderAuthError,
    ProviderConfigurationError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderRateLimited,
    ProviderRequestRejected,
    ProviderUnavailable,
    RetryPolicy,
    Timeouts,
    additional_api_parameters,
    create_client,
    host_profile_for,
    request_model,
)
from tests.policy.test_plugins import write_plugin
from tests.servers.provider_scripts import chat_text, chat_usage
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import API_KEY, client_for, conversation, run_round

KEY_ERROR_BODY = '{"error":{"message":"Incorrect API key provided: ' + API_KEY + '"}}'


def _provider(kind: ProviderKind, host: str = "", hostname: str = "") -> ProviderConfig:
    return ProviderConfig(
        id="0d4f3a1e-0000-4000-8000-000000000001",
        name="Team LLM",
        kind=kind,
        model="m",
        host=host,
        hostname=hostname,
    )


async def _run(server: ProviderServer, **client_kwargs: object) -> list[str]:
    client = client_for(OPENAI_CHAT_COMPLETIONS, server.base_url, **client_kwargs)  # type: ignore[arg-type]
    try:
        adapter = ChatCompletionsAdapter(client, conversation(), "m")
        outcome = await run_round(adapter)
        return [outcome.text]
    finally:
        await client.aclose()


# -- host profiles -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "wire_api", "strict", "parallel", "base_url"),
    [
        (ProviderKind.OPEN_AI, "responses", True, True, "https://api.openai.com/v1"),
        (ProviderKind.ANTHROPIC, "anthropic", True, True, "https://api.anthropic.com/v1"),
        (ProviderKind.GROQ, "chat_completions", False, True, "https://api.groq.com/openai/v1"),
        (ProviderKind.MISTRAL, "chat_completions", False, True, "https://api.mistral.ai/v1"),
        (ProviderKind.OPEN_ROUTER, "chat_completions", False, True, "https://openrouter.ai/api/v1"),
        (
            ProviderKind.HUGGINGFACE,
            "chat_completions",
            False,
            False,
            "https://router.huggingface.co/v1",
        ),
        (ProviderKind.DEEP_SEEK, "chat_completions", False, True, "https://api.deepseek.com/v1"),
        (ProviderKind.X, "chat_completions", False, True, "https://api.x.ai/v1"),
        (
            ProviderKind.FIREWORKS,
            "chat_completions",
            False,
            True,
            "https://api.fireworks.ai/inference/v1",
        ),
    ],
)
def test_each_cloud_host_has_its_profile(
    kind: ProviderKind, wire_api: str, strict: bool, parallel: bool, base_url: str
) -> None:
    profile = host_profile_for(_provider(kind))
    assert profile.wire_api == wire_api
    assert profile.enforces_strict_tool_schemas is strict
    assert profile.accepts_parallel_tool_calls is parallel
    assert profile.base_url == base_url


def test_only_chat_completions_may_make_up_call_ids() -> None:
    assert not host_profile_for(_provider(ProviderKind.GROQ)).requires_call_ids
    assert host_profile_for(_provider(ProviderKind.OPEN_AI)).requires_call_ids
    assert host_profile_for(_provider(ProviderKind.ANTHROPIC)).requires_call_ids


def test_openai_can_take_the_chat_completions_path() -> None:
    profile = host_profile_for(_provider(ProviderKind.OPEN_AI), wire_api="chat_completions")
    assert profile.wire_api == "chat_completions" and profile.enforces_strict_tool_schemas
    assert profile.endpoint_url == "https://api.openai.com/v1/chat/completions"


def test_other_hosts_speak_only_their_own_api() -> None:
    with pytest.raises(ProviderConfigurationError, match="speaks only the chat_completions API"):
        host_profile_for(_provider(ProviderKind.GROQ), wire_api="responses")


@pytest.mark.parametrize(
    ("host", "hostname", "base_url"),
    [
        ("OLLAMA", "http://localhost:11434", "http://localhost:11434/v1"),
        ("lm_studio", "http://10.0.0.5:1234/", "http://10.0.0.5:1234/v1"),
        ("VLLM", "https://vllm.example.org/v1", "https://vllm.example.org/v1"),
        ("LLAMA_CPP", " http://127.0.0.1:8080 ", "http://127.0.0.1:8080/v1"),
    ],
)
def test_a_self_hosted_server_is_found_by_its_hostname(
    host: str, hostname: str, base_url: str
) -> None:
    profile = host_profile_for(_provider(ProviderKind.SELF_HOSTED, host, hostname))
    assert profile.base_url == base_url
    assert profile.wire_api == "chat_completions"
    assert not profile.enforces_strict_tool_schemas
    assert not profile.requires_api_key


def test_a_self_hosted_entry_without_a_chat_server_is_refused() -> None:
    with pytest.raises(
        ProviderConfigurationError, match="Host 'WHISPER_CPP' cannot serve chat"
    ) as caught:
        host_profile_for(_provider(ProviderKind.SELF_HOSTED, "WHISPER_CPP", "http://x"))
    assert "OLLAMA" in str(caught.value)


def test_a_self_hosted_entry_without_a_hostname_is_refused() -> None:
    with pytest.raises(ProviderConfigurationError, match="needs Hostname"):
        host_profile_for(_provider(ProviderKind.SELF_HOSTED, "OLLAMA", ""))


def test_policy_check_keeps_exactly_the_providers_the_runtime_can_call(tmp_path: Path) -> None:
    """Every kind, Host and blank or set Hostname: the loader keeps an entry iff the runtime
    builds a host profile for it (one rule, policy.hosts, decides both)."""
    cases: dict[str, ProviderConfig] = {}
    lines = ['CONFIG["LLM_PROVIDERS"] = {}']
    for kind in ProviderKind:
        if kind is ProviderKind.NONE:
            continue  # no provider kind: the loader refuses the name itself
        for host in PROVIDER_HOSTS:
            for hostname in ("", "  ", "http://localhost:11434"):
                entry_id = str(uuid.uuid4())
                cases[entry_id] = ProviderConfig(
                    id=entry_id, name="P", kind=kind, model="m", host=host, hostname=hostname
                )
                lines.append(
                    f'CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {{ ["Id"] = "{entry_id}", '
                    f'["InstanceName"] = "P", ["UsedLLMProvider"] = "{kind.value}", '
                    f'["Host"] = "{host}", ["Hostname"] = "{hostname}", '
                    '["Model"] = { ["Id"] = "m", ["DisplayName"] = "M" } }'
                )
    plugin = load_plugin(write_plugin(tmp_path, extra="\n".join(lines)), PluginOrigin.ORGANIZATION)
    kept = {p.id for p in plugin.providers}
    served = set()
    for entry_id, config in cases.items():
        try:
            host_profile_for(config)
        except ProviderConfigurationError:
            continue
        served.add(entry_id)
    assert kept == served
    assert 0 < len(served) < len(cases)  # both sides of the rule are exercised
    assert len(plugin.findings) == len(cases) - len(served)


def test_litellm_needs_the_address_of_its_proxy() -> None:
    with pytest.raises(
        ProviderConfigurationError, match="provider 'Team LLM': LiteLLM has no default address"
    ):
        host_profile_for(_provider(ProviderKind.LITE_LLM))
    profile = host_profile_for(_provider(ProviderKind.LITE_LLM, hostname="https://litellm.corp/v1"))
    assert profile.endpoint_url == "https://litellm.corp/v1/chat/completions"


def test_a_hostname_which_is_no_web_address_is_refused_with_an_example() -> None:
    with pytest.raises(ProviderConfigurationError, match="'ftp://x' is not an http\\(s\\) address"):
        host_profile_for(_provider(ProviderKind.GROQ, hostname="ftp://x"))
    with pytest.raises(ProviderConfigurationError) as caught:
        host_profile_for(_provider(ProviderKind.GROQ, hostname="https://user:hunter2@h/v1"))
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    "hostname",
    [
        "https://llm.corp../v1",
        "https://llm..corp/v1",
        "http://llm server.corp:8000/v1",
        "https://\u2603.example/v1",  # IDNA 2008 refuses the label
        "https://[::1/v1",
        "https://llm.example.org:99999/v1",
    ],
)
def test_a_hostname_whose_host_or_port_cannot_be_read_is_refused_with_an_example(
    hostname: str,
) -> None:
    with pytest.raises(ProviderConfigurationError) as caught:
        host_profile_for(_provider(ProviderKind.SELF_HOSTED, "VLLM", hostname))
    message = str(caught.value)
    assert message.startswith(f"provider 'Team LLM': Hostname {hostname!r} ")
    assert "https://llm.example.org/v1 or http://localhost:11434" in message


def test_a_hostname_with_an_unreadable_host_never_shows_its_user_info() -> None:
    with pytest.raises(ProviderConfigurationError) as caught:
        host_profile_for(_provider(ProviderKind.GROQ, hostname="https://me:hunter2@llm.corp../v1"))
    assert "hunter2" not in str(caught.value) and "Hostname" in str(caught.value)


@pytest.mark.parametrize(
    ("hostname", "endpoint"),
    [
        ("http://localhost:11434", "http://localhost:11434/v1/chat/completions"),
        ("http://[::1]:8000/", "http://[::1]:8000/v1/chat/completions"),
        ("http://127.0.0.1:1234/v1", "http://127.0.0.1:1234/v1/chat/completions"),
        ("https://llm.corp./v1", "https://llm.corp./v1/chat/completions"),
        ("https://llm_team.corp/v1", "https://llm_team.corp/v1/chat/completions"),
        ("https://ki.b\u00fccher.example/v1", "https://ki.b\u00fccher.example/v1/chat/completions"),
    ],
)
def test_a_hostname_with_a_readable_host_is_the_base_url(hostname: str, endpoint: str) -> None:
    profile = host_profile_for(_provider(ProviderKind.SELF_HOSTED, "OLLAMA", hostname))
    assert profile.endpoint_url == endpoint


def test_a_kind_without_profile_is_refused_with_the_known_ones() -> None:
    with pytest.raises(
        ProviderConfigurationError, match="UsedLLMProvider NONE has no host profile"
    ):
        host_profile_for(_provider(ProviderKind.NONE))


# -- clients from provider entries ---------------------------------------------------------------


def test_the_key_comes_from_the_caller_or_the_environment() -> None:
    provider = _provider(ProviderKind.MISTRAL)
    from_env = create_client(provider, environ={"MISTRAL_API_KEY": "env-key-123"})
    assert from_env._headers["Authorization"] == "Bearer env-key-123"
    given = create_client(provider, "caller-key-456", environ={"MISTRAL_API_KEY": "env-key-123"})
    assert given._headers["Authorization"] == "Bearer caller-key-456"


def test_an_organization_key_is_decrypted_and_beats_the_environment() -> None:
    from dataclasses import replace

    from policy.configuration import SecretValue
    from policy.secrets import ENV_SECRET, encrypt, generate_secret

    secret = generate_secret()
    provider = replace(
        _provider(ProviderKind.MISTRAL), api_key=SecretValue(encrypt("org-key-789", secret))
    )
    environ = {ENV_SECRET: secret, "MISTRAL_API_KEY": "env-key-123"}
    assert create_client(provider, environ=environ)._headers["Authorization"] == (
        "Bearer org-key-789"
    )
    assert create_client(provider, "caller-key", environ=environ)._headers["Authorization"] == (
        "Bearer caller-key"
    )
    with pytest.raises(ProviderConfigurationError, match="no encryption secret") as missing:
        create_client(provider, environ={"MISTRAL_API_KEY": "env-key-123"})
    with pytest.raises(ProviderConfigurationError, match="cannot be decrypted") as wrong:
        create_client(provider, environ={ENV_SECRET: generate_secret()})
    for refusal in (missing.value, wrong.value):
        assert "org-key" not in str(refusal) and secret not in str(refusal)


def test_a_missing_key_names_where_it_could_come_from() -> None:
    with pytest.raises(ProviderConfigurationError, match="pass api_key or set ANTHROPIC_API_KEY"):
        create_client(_provider(ProviderKind.ANTHROPIC), environ={})


def test_a_self_hosted_server_needs_no_key() -> None:
    client = create_client(
        _provider(ProviderKind.SELF_HOSTED, "OLLAMA", "http://localhost:11434"), environ={}
    )
    assert "Authorization" not in client._headers


def test_the_key_never_shows_in_the_client_repr() -> None:
    client = create_client(_provider(ProviderKind.GROQ), "gsk_secret_value_1234", environ={})
    assert "gsk_secret" not in repr(client)


async def test_create_adapter_picks_the_adapter_of_the_wire_api(server: ProviderServer) -> None:
    cases = [
        (ProviderKind.OPEN_AI, ResponsesAdapter),
        (ProviderKind.ANTHROPIC, AnthropicAdapter),
        (ProviderKind.GROQ, ChatCompletionsAdapter),
    ]
    for kind, adapter_type in cases:
        client = create_client(_provider(kind, hostname=server.base_url), "k-123456", environ={})
        assert isinstance(create_adapter(client, conversation(), "m"), adapter_type)
        await client.aclose()


async def test_a_client_from_a_provider_entry_talks_to_its_host(server: ProviderServer) -> None:
    server.queue(Reply([*chat_text("Hi"), chat_usage(12)]))
    provider = _provider(ProviderKind.SELF_HOSTED, "VLLM", server.base_url)
    async with create_client(provider, environ={}) as client:
        outcome = await run_round(create_adapter(client, conversation(), "qwen"))
    assert outcome.text == "Hi"
    assert server.requests[0].path == "/v1/chat/completions"
    assert "authorization" not in server.requests[0].headers


# -- HTTP errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_refused_credentials_say_to_check_the_key_and_never_show_it(
    server: ProviderServer, status: int
) -> None:
    server.queue(Reply(status=status, body=KEY_ERROR_BODY))
    with pytest.raises(ProviderAuthError) as caught:
        await _run(server)
    message = str(caught.value)
    assert f"HTTP {status}" in message and "Check the API key" in message
    assert "Incorrect API key provided: *****" in message
    assert API_KEY not in message
    assert len(server.requests) == 1


async def test_an_unknown_model_says_to_check_the_model_id(server: ProviderServer) -> None:
    server.queue(Reply(status=404, body='{"error":{"message":"model gpt-9 does not exist"}}'))
    with pytest.raises(ProviderModelNotFound, match="Check the model id") as caught:
        await _run(server)
    assert "model gpt-9 does not exist" in str(caught.value)
    assert caught.value.status_code == 404


async def test_a_rejected_request_passes_on_what_the_host_said(server: ProviderServer) -> None:
    server.queue(Reply(status=400, body='{"error":"parallel_tool_calls is not supported"}'))
    with pytest.raises(ProviderRequestRejected, match="parallel_tool_calls is not supported"):
        await _run(server)
    assert len(server.requests) == 1


async def test_a_rate_limit_is_retried_after_the_time_the_host_asks_for(
    server: ProviderServer,
) -> None:
    server.queue(
        Reply(status=429, headers={"Retry-After": "0"}, body="{}"),
        Reply(status=429, headers={"Retry-After": "0"}, body="{}"),
        Reply(chat_text("finally")),
    )
    assert await _run(server) == ["finally"]
    assert len(server.requests) == 3


async def test_retries_are_bounded(server: ProviderServer) -> None:
    server.queue(*[Reply(status=429, headers={"Retry-After": "0"}, body="{}")] * 4)
    with pytest.raises(ProviderRateLimited, match="HTTP 429"):
        await _run(server)
    assert len(server.requests) == 3


async def test_a_retry_after_beyond_the_cap_fails_at_once(server: ProviderServer) -> None:
    server.queue(
        Reply(status=429, headers={"Retry-After": "3600"}, body="{}"), Reply(chat_text("x"))
    )
    with pytest.raises(ProviderRateLimited, match="wait 3600 s") as caught:
        await _run(server)
    assert caught.value.retry_after_seconds == 3600
    assert len(server.requests) == 1


async def test_a_retry_after_as_a_date_is_understood(server: ProviderServer) -> None:
    server.queue(
        Reply(status=429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, body="{}"),
        Reply(chat_text("ok")),
    )
    assert await _run(server) == ["ok"]


async def test_a_server_error_is_retried_with_backoff(server: ProviderServer) -> None:
    server.queue(
        Reply(status=503, body="overloaded"), Reply(status=502, body=""), Reply(chat_text("up"))
    )
    assert await _run(server) == ["up"]
    assert len(server.requests) == 3


async def test_the_retry_notice_reads_as_sentences(
    server: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.queue(Reply(status=503, body="overloaded"), Reply(chat_text("up")))
    with caplog.at_level(logging.WARNING, logger="runtime"):
        assert await _run(server) == ["up"]
    (notice,) = [r.getMessage() for r in caplog.records if "Retrying in" in r.getMessage()]
    assert ".;" not in notice and ". Retrying in " in notice, notice


async def test_a_lasting_server_error_says_to_try_later(server: ProviderServer) -> None:
    server.queue(*[Reply(status=500, body='{"message":"internal"}')] * 3)
    with pytest.raises(
        ProviderUnavailable, match=r"HTTP 500\)\. Try again later\. The host said: internal"
    ):
        await _run(server)


async def test_a_timeout_before_the_answer_is_retried(server: ProviderServer) -> None:
    server.queue(Reply(chat_text("late"), stall_seconds=1.0), Reply(chat_text("fast")))
    assert await _run(server, timeouts=Timeouts(read_seconds=0.2)) == ["fast"]


async def test_lasting_timeouts_end_in_a_clear_error(server: ProviderServer) -> None:
    server.queue(*[Reply(chat_text("late"), stall_seconds=1.0)] * 2)
    with pytest.raises(ProviderUnavailable, match="did not answer in time"):
        await _run(
            server,
            timeouts=Timeouts(read_seconds=0.2),
            retry=RetryPolicy(max_attempts=2, initial_backoff_seconds=0),
        )


async def test_a_refused_connection_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = client_for(OPENAI_CHAT_COMPLETIONS, f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderUnavailable, match="refused the connection"):
        await run_round(ChatCompletionsAdapter(client, conversation(), "m"))
    await client.aclose()


async def test_a_connection_broken_during_the_answer_is_not_retried(server: ProviderServer) -> None:
    server.queue(
        Reply(chat_text("Half an ans"), break_after_events=True), Reply(chat_text("again"))
    )
    client = client_for(OPENAI_CHAT_COMPLETIONS, server.base_url)
    deltas: list[str] = []
    with pytest.raises(ProviderUnavailable, match="broke off while the answer was streaming"):
        async for event in ChatCompletionsAdapter(client, conversation(), "m").execute_round(
            None, True
        ):
            deltas.append(getattr(event, "content", ""))
    await client.aclose()
    assert "".join(deltas) == "Half an ans"
    assert len(server.requests) == 1


async def test_an_answer_which_is_no_event_stream_is_a_protocol_error(
    server: ProviderServer,
) -> None:
    server.queue(Reply(body='{"choices":[]}', content_type="application/json"))
    with pytest.raises(ProviderProtocolError, match="instead of a server-sent event stream"):
        await _run(server)


async def test_malformed_event_lines_are_skipped(server: ProviderServer) -> None:
    raw = (
        ": keep-alive comment\n\n"
        "this line has no colon\n\n"
        'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
        "data: {not json\n\n"
        "retry: abc\n"
        'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\r\n\r\n'
        "data: [DONE]\n\n"
    )
    server.queue(Reply(raw=raw))
    assert await _run(server) == ["Hello"]


def test_a_hostname_replaces_the_default_address_of_a_cloud_host() -> None:
    provider = _provider(ProviderKind.OPEN_AI, hostname="https://gateway.corp/openai/v1/")
    assert host_profile_for(provider).endpoint_url == "https://gateway.corp/openai/v1/responses"
    chat = host_profile_for(provider, wire_api="chat_completions")
    assert chat.endpoint_url == "https://gateway.corp/openai/v1/chat/completions"


# -- additional API parameters -------------------------------------------------------------------


def _with_parameters(text: object) -> ProviderConfig:
    provider = _provider(ProviderKind.GROQ)
    return ProviderConfig(
        id=provider.id,
        name=provider.name,
        kind=provider.kind,
        model="m",
        additional={"AdditionalJsonApiParameters": text},
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"temperature": 0.2, "top_p": 0.9', {"temperature": 0.2, "top_p": 0.9}),
        ('{"reasoning": {"effort": "low"}}', {"reasoning": {"effort": "low"}}),
        ('"max_tokens": 100,', {"max_tokens": 100}),
        ("  ", {}),
        (None, {}),
    ],
)
def test_additional_parameters_are_read_as_ai_studio_writes_them(
    text: object, expected: dict[str, object]
) -> None:
    assert additional_api_parameters(_with_parameters(text)) == expected


def test_additional_parameters_which_are_no_json_are_refused_with_an_example() -> None:
    with pytest.raises(
        ProviderConfigurationError,
        match="provider 'Team LLM': AdditionalJsonApiParameters is no valid JSON",
    ) as caught:
        additional_api_parameters(_with_parameters('"temperature": 0.2 "top_p"'))
    assert '"temperature": 0.2, "top_p": 0.9' in str(caught.value)
    with pytest.raises(ProviderConfigurationError, match="must be JSON object members"):
        additional_api_parameters(_with_parameters("[1, 2]"))


@pytest.mark.parametrize(
    ("kind", "chosen", "model", "expected"),
    [
        (
            ProviderKind.HUGGINGFACE,
            "NOVITA",
            "meta-llama/Llama-3.3-70B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct:novita",
        ),
        (ProviderKind.HUGGINGFACE, "TOGETHER_AI", "m", "m:together"),
        (ProviderKind.HUGGINGFACE, "NONE", "m", "m"),
        (ProviderKind.HUGGINGFACE, "NOVITA", "m:cerebras", "m:cerebras"),
        (ProviderKind.GROQ, "NOVITA", "m", "m"),
    ],
)
def test_hugging_face_routes_to_the_chosen_inference_provider(
    kind: ProviderKind, chosen: str, model: str, expected: str
) -> None:
    provider = ProviderConfig(
        id="x", name="HF", kind=kind, model=model, additional={"HFInferenceProvider": chosen}
    )
    assert request_model(provider) == expected


# -- audit: odd keys and addresses ---------------------------------------------------------------


@pytest.mark.parametrize("key", ["sk-abc\u2013def", "sk-\u00e9t\u00e9", "sk-abc\u00a0", "sk-abc\n"])
def test_a_key_which_cannot_travel_in_a_header_is_refused_without_showing_it(key: str) -> None:
    with pytest.raises(ProviderConfigurationError, match="API key of 'Team LLM'") as caught:
        create_client(_provider(ProviderKind.MISTRAL), environ={"MISTRAL_API_KEY": key})
    assert "sk-" not in str(caught.value) and "printable ASCII" in str(caught.value)


def test_a_hostname_without_scheme_never_shows_a_key_in_its_query() -> None:
    with pytest.raises(ProviderConfigurationError, match="not an http\\(s\\) address") as caught:
        host_profile_for(
            _provider(ProviderKind.GROQ, hostname="llm.example.org/v1?api_key=hunter2")
        )
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(chat_text("hi"), headers={"content-encoding": "gzip"}),
        Reply(status=400, body="not gzip at all", headers={"content-encoding": "gzip"}),
    ],
    ids=["stream", "error body"],
)
async def test_an_answer_whose_compression_is_broken_is_a_protocol_error(
    server: ProviderServer, reply: Reply
) -> None:
    server.queue(reply)
    with pytest.raises(ProviderProtocolError, match="cannot be decompressed"):
        await _run(server)
    assert len(server.requests) == 1


async def test_a_key_cut_by_the_length_limit_of_the_hosts_message_never_shows_in_part(
    server: ProviderServer,
) -> None:
    padding = "x" * 280
    body = '{"error":{"message":"' + padding + " key " + API_KEY + ' was refused"}}'
    server.queue(Reply(status=401, body=body))
    with pytest.raises(ProviderAuthError) as caught:
        await _run(server)
    assert API_KEY[:6] not in str(caught.value)


def test_a_json_mistake_on_a_later_line_is_placed_by_line_and_column() -> None:
    members = '"temperature": 0.2,\n"top_p" 0.9'
    with pytest.raises(ProviderConfigurationError, match="at line 2, column 9"):
        additional_api_parameters(_with_parameters(members))
    with pytest.raises(ProviderConfigurationError, match="at line 2, column 6"):
        additional_api_parameters(_with_parameters('{"a": 1,\n "b" 2}'))
