"""`policy schema`: a valid JSON Schema that accepts what toolpolicy accepts and refuses the rest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from policy.config.settings import SETTING_KEYS


def _policy_command() -> list[str]:
    candidate = Path(sys.executable).parent / "policy"
    return [str(candidate)] if candidate.exists() else ["policy"]


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    done = subprocess.run(
        [*_policy_command(), "schema"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


_GUID = "6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f41"
_DATA_SOURCE = {
    "Id": _GUID,
    "Name": "Handbook",
    "Type": "ERI_V1",
    "Hostname": "https://eri.example.org",
    "Port": 443,
    "AuthMethod": "NONE",
    "SecurityPolicy": "SELF_HOSTED",
    "SelectedRetrievalId": "default",
    "MaxMatches": 10,
}


def _config(**settings: Any) -> dict[str, Any]:
    return {"SETTINGS": settings}


def test_every_known_settings_key_is_described(validator: Draft202012Validator) -> None:
    properties = validator.schema["properties"]["SETTINGS"]["properties"]
    assert set(SETTING_KEYS) <= set(properties)
    assert "DataTools.EnableTools.AllowUserOverride" in properties
    assert "DataTools.DisabledToolIds.AllowUserOverride" not in properties


def test_a_realistic_configuration_is_valid(validator: Draft202012Validator) -> None:
    config = {
        "SETTINGS": {
            "DataTools.EnableTools": True,
            "DataTools.EnableTools.AllowUserOverride": "true",
            "DataTools.DisabledToolIds": ["search_confluence"],
            "DataTools.MinimumProviderConfidenceByToolId": {"web_search": "very_low"},
            "DataTools.LockedToolSettings": {
                "web_search.searxng.baseUrl": "https://searx.example.org",
                "web_search.staan.apiKey": "ENC:v1:AAAA",
                "read_web_page.freeAddressChoice": "ON",
            },
            "DataTools.DefaultToolSettings": {"web_search.defaultLanguage": "de-DE"},
            "DataTools.DefaultToolIdsByComponent": {"CHAT": ["web_search"]},
            "DataConfidence.ConfidenceScheme": "trust_europe",
            "DataConfidence.CustomConfidenceScheme": {"OPEN_AI": "MEDIUM"},
            "DataApp.UpdateInterval": "DAILY",
        },
        "LLM_PROVIDERS": [
            {
                "Id": "6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f41",
                "InstanceName": "GPU cluster",
                "UsedLLMProvider": "SELF_HOSTED",
                "Host": "VLLM",
                "Hostname": "https://llm.example.org",
                "Model": {"Id": "qwen", "DisplayName": "Qwen"},
                "CapabilityOverrides": {"FUNCTION_CALLING": True},
            }
        ],
        "CHAT_TEMPLATES": [
            {
                "Id": "6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f42",
                "Name": "R",
                "SystemPrompt": "x",
                "ToolIds": [],
            }
        ],
    }
    assert list(validator.iter_errors(config)) == []


@pytest.mark.parametrize(
    "config",
    [
        {},
        _config(**{"DataConfidence.ConfidenceScheme": "TRUST_MARS"}),
        _config(**{"DataTools.MinimumProviderConfidenceByToolId": {"web_search": "UNKNOWN"}}),
        _config(**{"DataTools.EnableTools": "maybe"}),
        _config(**{"DataTools.DisabledToolIds": "web_search"}),
        _config(**{"DataTools.LockedToolSettings": {"read_web_page.freeAddressChoice": "on"}}),
        _config(**{"DataTools.DefaultToolIdsByComponent": {"KITCHEN": ["web_search"]}}),
        {"SETTINGS": {}, "LLM_PROVIDERS": [{"Id": "not-a-guid"}]},
        {"SETTINGS": {}, "MCP_SERVERS": [{"Id": _GUID, "Name": "t", "Transport": "stdio"}]},
        {
            "SETTINGS": {},
            "MCP_SERVERS": [{"Id": _GUID, "Name": "t", "Transport": "STREAMABLE_HTTP", "Url": " "}],
        },
        {"SETTINGS": {}, "DATA_SOURCES": [{**_DATA_SOURCE, "AuthMethod": "TOKEN"}]},
    ],
    ids=[
        "no-settings",
        "unknown-scheme",
        "unknown-level",
        "bool-as-word",
        "list-as-string",
        "choice-case",
        "unknown-component",
        "bad-provider",
        "stdio-without-command",
        "blank-url",
        "token-without-token",
    ],
)
def test_what_toolpolicy_refuses_the_schema_refuses(
    validator: Draft202012Validator, config: dict[str, Any]
) -> None:
    assert list(validator.iter_errors(config)) != []


@pytest.mark.parametrize(
    "section, entry",
    [
        (
            "MCP_SERVERS",
            {"Id": "{" + _GUID + "}", "Name": "t", "Transport": "stdio", "Command": "x"},
        ),
        (
            "MCP_SERVERS",
            {
                "Id": _GUID.replace("-", ""),
                "Name": "t",
                "Transport": "STDIO",
                "Command": "x",
                "MinimumProviderConfidence": "high",
            },
        ),
        ("DATA_SOURCES", {**_DATA_SOURCE, "Type": "eri_v1", "Id": "(" + _GUID.upper() + ")"}),
    ],
    ids=[
        "braces-and-lower-case-transport",
        "32-hex-and-lower-case-level",
        "parentheses-and-lower-case-type",
    ],
)
def test_what_toolpolicy_reads_the_schema_accepts(
    validator: Draft202012Validator, section: str, entry: dict[str, Any]
) -> None:
    assert list(validator.iter_errors({"SETTINGS": {}, section: [entry]})) == []
