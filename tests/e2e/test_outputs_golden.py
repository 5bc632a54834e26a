"""What the policy decides and says about examples/, byte for byte: every offer decision (as
explain's JSON and text), the `policy explain --all`, `check`, `tools` and `diff` outputs, and
the tool lists each provider API is sent, compared with the files in tests/e2e/golden/outputs/.

The configurations are the example organization (base + department), the base plugin alone,
the organization with the example user settings, and the organization with the example MCP
server (listed live once from examples/mcp/tickets_server.py, then read offline) unpinned and
pinned. These files were written before the offer checks were reorganized (issue 23) and change
only on purpose: set TOOLPOLICY_WRITE_GOLDEN=1 to write them again after an intended change.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from policy import Policy
from policy.cli_options import load_cli_policy
from policy.configuration import ProviderConfig
from policy.explain import decision_document, decision_text, kind_provider, ordered_tool_ids
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSecurity,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ProviderKind,
)
from runtime import Chat, ChatMessage, ChatRuntime, Role
from runtime.chat import MemoryChatStore
from runtime.data_sources import DataSourceKind, SearchableDataSource
from runtime.providers import create_client
from runtime.providers.hosts import WireApi
from tests.e2e._kit import (
    API_KEY,
    FAST_RETRIES,
    OPENAI_ID,
    ROOT,
    VLLM_ID,
    anthropic_provider,
)
from tests.servers.provider_scripts import (
    anthropic_text_message,
    chat_text,
    responses_completed,
    responses_message,
    responses_text,
)
from tests.servers.provider_server import ProviderServer, Reply

GOLDEN = Path(__file__).parent / "golden" / "outputs"
WRITE = os.environ.get("TOOLPOLICY_WRITE_GOLDEN") == "1"
EXAMPLES = ROOT / "examples"
ORGANIZATION = EXAMPLES / "organization"
CLOCK_TOOLS = EXAMPLES / "clock_tool.py"
USER_SETTINGS = EXAMPLES / "user-settings.yaml"
MCP_PLUGIN = EXAMPLES / "mcp" / "plugin.lua"
COMPONENTS = (Component.CHAT, Component.CODING_ASSISTANT)
KIND_PROVIDERS = (
    kind_provider(ProviderKind.ANTHROPIC, "claude-sonnet-4-5"),
    kind_provider(ProviderKind.SELF_HOSTED, "some-unknown-model"),
)
_VARYING = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    # A table's column widths follow the clone's path length; its cells and their order stay.
    (re.compile(r" {2,}"), "  "),
    (re.compile(r"-{3,}"), "---"),
)


@dataclass(frozen=True)
class Scenario:
    name: str
    org: tuple[Path, ...]
    user_settings: Path | None = None


def _compare(name: str, actual: str, replacements: Sequence[tuple[str, str]] = ()) -> None:
    for old, new in replacements:
        actual = actual.replace(old, new)
    for pattern, replacement in _VARYING:
        actual = pattern.sub(replacement, actual)
    golden = GOLDEN / name
    if WRITE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
    expected = golden.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), "golden", "now", lineterm="", n=1
        )
        shown = "\n".join(line[:300] for line in itertools.islice(diff, 60))
        pytest.fail(f"{name} differs from its golden output:\n{shown}", pytrace=False)


@pytest.fixture(scope="module")
def mcp_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path]]:
    """The tickets server listed once into a state directory, and two plugin folders: the
    example entry as shipped (RequirePins, no pins) and the same entry with search_tickets
    pinned to the definition the listing holds."""
    root = tmp_path_factory.mktemp("mcp")
    state, unpinned, pinned = root / "state", root / "unpinned", root / "pinned"
    unpinned.mkdir()
    (unpinned / "plugin.lua").write_bytes(MCP_PLUGIN.read_bytes())
    previous = Path.cwd()
    os.chdir(ROOT)  # the example names its server by a path from the repository root
    try:
        listed = load_cli_policy([ORGANIZATION, unpinned], [], None, state)
    finally:
        os.chdir(previous)
    (listing,) = listed.mcp_listings.values()
    assert listing.ok, listing.error
    fingerprint = next(t.fingerprint for t in listing.tools if t.name == "search_tickets")
    pinned.mkdir()
    text = MCP_PLUGIN.read_text(encoding="utf-8").replace(
        '["Pins"] = {},', f'["Pins"] = {{ ["search_tickets"] = "{fingerprint}" }},'
    )
    (pinned / "plugin.lua").write_text(text, encoding="utf-8")
    yield state, unpinned, pinned


def _scenarios(mcp_state: tuple[Path, Path, Path]) -> list[Scenario]:
    _, unpinned, pinned = mcp_state
    return [
        Scenario("organization", (ORGANIZATION,)),
        Scenario("base", (ORGANIZATION / "base",)),
        Scenario("user", (ORGANIZATION,), USER_SETTINGS),
        Scenario("mcp_unpinned", (ORGANIZATION, unpinned)),
        Scenario("mcp_pinned", (ORGANIZATION, pinned)),
    ]


def _load(scenario: Scenario, state: Path, *, executable_tools: bool = False) -> Policy:
    return load_cli_policy(
        scenario.org,
        [],
        scenario.user_settings,
        state,
        [CLOCK_TOOLS],
        offline=True,
        executable_tools=executable_tools,
    )


def _replacements(mcp_state: tuple[Path, Path, Path]) -> list[tuple[str, str]]:
    state, unpinned, pinned = mcp_state
    return [
        (str(state), "<state>"),
        (str(unpinned), "<mcp>"),
        (str(pinned), "<mcp>"),
        (str(ROOT), "<repo>"),
    ]


SCENARIO_NAMES = ("organization", "base", "user", "mcp_unpinned", "mcp_pinned")


def _decision_cases(
    policy: Policy, only_mcp: bool
) -> Iterator[tuple[str, ProviderConfig | None, Component, OutboundDataRestriction]]:
    """Every tool for the configured providers, stand-ins of other kinds and no provider, in a
    component that shows tools and one that does not; the outbound restrictions in CHAT."""
    tool_ids = [t for t in ordered_tool_ids(policy) if not only_mcp or "__" in t]
    for component in COMPONENTS:
        for provider in (*policy.providers, *KIND_PROVIDERS, None):
            restrictions: tuple[OutboundDataRestriction, ...] = (
                OutboundDataRestriction.UNRESTRICTED,
            )
            if component is Component.CHAT and provider in policy.providers:
                restrictions = tuple(OutboundDataRestriction)
            for tool_id in tool_ids:
                for restriction in restrictions:
                    yield tool_id, provider, component, restriction


@pytest.mark.parametrize("name", ("organization", "base", "mcp_unpinned", "mcp_pinned"))
def test_every_decision_and_its_explanation_are_unchanged(
    name: str, mcp_state: tuple[Path, Path, Path]
) -> None:
    """explain's JSON (the decision as data) one line per decision, and its text."""
    scenario = next(s for s in _scenarios(mcp_state) if s.name == name)
    policy = _load(scenario, mcp_state[0])
    lines: list[str] = []
    texts: list[str] = []
    for tool_id, provider, component, restriction in _decision_cases(
        policy, only_mcp=name.startswith("mcp")
    ):
        decision = policy.registry.offer_decision(
            tool_id, provider, component, outbound_restriction=restriction
        )
        document = {"outbound_restriction": restriction.name, **decision_document(decision)}
        lines.append(json.dumps(document, default=str))
        texts.append(
            f"[{restriction.name}] " + decision_text(decision, provider.name if provider else "")
        )
    for component in COMPONENTS:
        for provider in (*policy.providers, *KIND_PROVIDERS):
            for preferred in DataSourceRetrievalMode:
                mode = policy.registry.retrieval_mode(preferred, provider, component)
                lines.append(
                    json.dumps(
                        {
                            "retrieval_mode": preferred.name,
                            "provider": provider.id,
                            "component": component.value,
                            "mode": mode.mode.name,
                            "fallback_reason": mode.fallback_reason.name,
                            "decision": decision_document(mode.decision) if mode.decision else None,
                        }
                    )
                )
    replacements = _replacements(mcp_state)
    _compare(f"{name}.decisions.jsonl", "\n".join(lines) + "\n", replacements)
    _compare(f"{name}.explain.txt", "\n\n".join(texts) + "\n", replacements)


def _cli(*args: str | Path) -> str:
    from policy.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return f"exit {result.exit_code}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"


def _org_args(scenario: Scenario, state: Path) -> list[str | Path]:
    args: list[str | Path] = []
    for folder in scenario.org:
        args += ["--org", folder]
    if scenario.user_settings:
        args += ["--user-settings", scenario.user_settings]
    return [*args, "--state-dir", state, "--offline"]


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_what_the_report_commands_print_is_unchanged(
    name: str, mcp_state: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in [v for v in os.environ if v.startswith("TOOLPOLICY_")]:
        monkeypatch.delenv(variable)
    scenario = next(s for s in _scenarios(mcp_state) if s.name == name)
    where = _org_args(scenario, mcp_state[0])
    outputs = []
    tools = [*where, "--tools-file", CLOCK_TOOLS]
    against = ["--against-org", ORGANIZATION / "base"]
    for command in (
        ["explain", "--all", *tools],
        ["explain", "--all", *tools, "-f", "json"],
        ["explain", "--all", *tools, "--component", "CODING_ASSISTANT"],
        ["explain", "web_search", *tools, "--provider", OPENAI_ID],
        ["explain", "semantic_search", *tools, "--provider", VLLM_ID, "-f", "json"],
        ["check", *tools],
        ["check", *tools, "-f", "json"],
        ["tools", *tools],
        ["tools", *tools, "-f", "json"],
        ["diff", *where, *against],
        ["diff", *where, *against, "-f", "json"],
    ):
        shown = " ".join(str(a) for a in command)
        outputs.append(f"$ policy {shown}\n{_cli(*command)}")
    _compare(f"{name}.commands.txt", "\n".join(outputs), _replacements(mcp_state))


class _NoPassages:
    async def search(self, query: str, page: int, page_size: int) -> Any:
        raise AssertionError("the golden runs make no tool call")


def _wire_runs() -> list[tuple[str, str, Reply, WireApi | None]]:
    chat_reply = Reply(chat_text("Fine."))
    responses_reply = Reply(
        [*responses_text("Fine."), responses_completed([responses_message("Fine.")])]
    )
    return [
        ("vllm.chat_completions", VLLM_ID, chat_reply, None),
        ("openai.responses", OPENAI_ID, responses_reply, None),
        ("openai.chat_completions", OPENAI_ID, chat_reply, "chat_completions"),
        ("anthropic.messages", "anthropic", Reply(anthropic_text_message("Fine.")), None),
    ]


@pytest.mark.parametrize("name", ("organization", "user", "mcp_pinned"))
async def test_the_tools_each_provider_api_is_sent_are_unchanged(
    name: str, mcp_state: tuple[Path, Path, Path], server: ProviderServer
) -> None:
    scenario = next(s for s in _scenarios(mcp_state) if s.name == name)
    policy = _load(scenario, mcp_state[0], executable_tools=True)
    sources = [
        SearchableDataSource(
            id="handbook",
            name="Handbook",
            searcher=_NoPassages(),  # type: ignore[arg-type]
            page_size=5,
            kind=DataSourceKind.EXTERNAL,
            security=DataSecurity.ALLOW_ANY,
            required_confidence=ConfidenceLevel.NONE,
        )
    ]
    bodies: list[str] = []
    async with ChatRuntime(policy, data_sources=sources) as runtime:
        for label, which, reply, wire_api in _wire_runs():
            provider = (
                replace(policy.provider(which), hostname=server.base_url)
                if which != "anthropic"
                else anthropic_provider(server)
            )
            for selection in (None, tuple(policy.tool_ids)):
                server.requests.clear()
                server.queue(reply)
                chat = Chat.open(f"golden-{label}", MemoryChatStore())
                made = create_client(provider, API_KEY, wire_api=wire_api, retry=FAST_RETRIES)
                async with made as provider_client:
                    async for _ in runtime.respond(
                        chat,
                        provider,
                        [ChatMessage(Role.USER, "Hello")],
                        selected_tool_ids=selection,
                        client=provider_client,
                        api_key=API_KEY,
                    ):
                        pass
                (request,) = server.requests
                selected = "default selection" if selection is None else "every tool selected"
                body = json.dumps(request.json, indent=1, ensure_ascii=False)
                digest = hashlib.sha256(request.body).hexdigest()
                bodies.append(
                    f"=== {label}, {selected}: {request.path}\n"
                    f"sha256 of the bytes sent: {digest}\n{body}\n"
                )
    _compare(f"{name}.wire.txt", "\n".join(bodies), _replacements(mcp_state))
