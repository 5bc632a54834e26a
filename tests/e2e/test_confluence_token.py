"""Confluence Cloud's API token, deployed as a locked ENC:v1 value, reaches Confluence and nothing
else: a real `respond` whose search_confluence call Confluence refuses (401) shows the token in no
event, decision-log line or log record, in plain text, encrypted or inside the Basic credential."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from policy import load_policy
from policy.secrets import encrypt, generate_secret
from runtime import Chat, ChatMessage, ChatRuntime
from runtime.decision_log import JsonLinesSink
from runtime.execution import ToolServices
from runtime.messages import Role
from runtime.tools import builtin_executable_tools
from runtime.tools.confluence_rest import UNAUTHORIZED_CLOUD_ERROR
from runtime.web.addresses import AddressClass
from tests.e2e._kit import VLLM_ID, client, organization_provider
from tests.policy.test_cli import write_plugin
from tests.servers.confluence_server import running_confluence
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.tls import self_signed
from tests.tools.conftest import overrides

TOKEN = "canary-cloud-token-41c9"
EMAIL = "wiki-search@example.org"


def _plugin(folder: Path, base_url: str, encrypted: str) -> Path:
    return write_plugin(
        folder,
        f"""\
CONFIG = {{}}
CONFIG["LLM_PROVIDERS"] = {{}}
CONFIG["LLM_PROVIDERS"][1] = {{
    ["Id"] = "{VLLM_ID}",
    ["InstanceName"] = "Example Corp vLLM",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "VLLM",
    ["Hostname"] = "https://llm.example.org",
    ["Model"] = {{ ["Id"] = "Qwen/Qwen2.5-72B-Instruct", ["DisplayName"] = "Qwen 2.5 72B" }},
    ["CapabilityOverrides"] = {{ ["FUNCTION_CALLING"] = true }},
}}
CONFIG["SETTINGS"] = {{}}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {{
    ["search_confluence.baseUrl"] = "{base_url}",
    ["search_confluence.deployment"] = "CLOUD",
    ["search_confluence.accountEmail"] = "{EMAIL}",
    ["search_confluence.apiToken"] = "{encrypted}",
}}
""",
    )


async def test_a_refused_cloud_token_is_in_no_event_decision_log_or_log_record(
    chat: Chat,
    server: ProviderServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret)
    encrypted = encrypt(TOKEN, secret)
    credential = base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    canaries = (TOKEN, encrypted, credential)
    (tmp_path / "tls").mkdir()
    tls = self_signed(tmp_path / "tls", ["public.test"])
    with running_confluence(tls.certfile, tls.keyfile) as confluence:
        plugin = _plugin(tmp_path / "org", confluence.base_url("public.test"), encrypted)
        policy = load_policy(org=[plugin.parent], tools=builtin_executable_tools())
        assert not policy.errors, policy.errors
        server.queue(
            Reply([chat_call(0, "call_0", "search_confluence", json.dumps({"query": "holidays"}))]),
            Reply(chat_text("The wiki could not be searched.")),
        )
        log = tmp_path / "decisions.jsonl"
        vllm = organization_provider(policy, VLLM_ID, server)
        services = ToolServices(
            retrieval_overrides=overrides(AddressClass.PUBLIC, tls.client_context())
        )
        events: list[Any] = []
        async with (
            client(vllm) as provider_client,
            ChatRuntime(policy, services=services, decision_log=JsonLinesSink(log)) as runtime,
        ):
            async for event in runtime.respond(
                chat,
                vllm,
                [ChatMessage(Role.USER, "When are the holidays?")],
                selected_tool_ids=["search_confluence"],
                client=provider_client,
            ):
                events.append(event)
        assert len(confluence.state.rest_requests) == 1

    shown = [repr(e) + json.dumps(dataclasses.asdict(e), default=str) for e in events]
    lines = log.read_text(encoding="utf-8")
    records = "\n".join(r.getMessage() for r in caplog.records)
    sent = json.dumps(server.bodies[1]["messages"], ensure_ascii=False)
    assert UNAUTHORIZED_CLOUD_ERROR in sent, "the model learns what failed"
    (line,) = lines.splitlines()
    assert [(c["tool_id"], c["status"]) for c in json.loads(line)["calls"]] == [
        ("search_confluence", "ERROR")
    ]
    for text in (*shown, lines, records, sent):
        assert [c for c in canaries if c in text] == []
