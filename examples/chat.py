"""A real conversation with a provider from the environment, printing every event.

    OPENAI_API_KEY=sk-...        python examples/chat.py "What time is it in Tokyo?"
    ANTHROPIC_API_KEY=sk-ant-... python examples/chat.py
    TOOLPOLICY_BASE_URL=http://localhost:8000/v1 TOOLPOLICY_MODEL=Qwen/Qwen2.5-7B-Instruct \\
                                 python examples/chat.py

The first of TOOLPOLICY_BASE_URL (a self-hosted OpenAI-compatible server: vLLM, Ollama,
llama.cpp, LM Studio — started with tool calling on), OPENAI_API_KEY and ANTHROPIC_API_KEY picks
the provider; TOOLPOLICY_MODEL picks the model. The example organization's policy decides which
of the example tools (current_time, calculator) the model gets. Each further line typed on stdin
continues the conversation; an empty line or end of input stops.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from clock_tool import create_tools

from policy import ProviderKind, load_policy
from policy.configuration import ProviderConfig
from runtime import (
    Chat,
    ChatMessage,
    ChatRequirementError,
    ChatRuntime,
    FinalAnswer,
    MemoryChatStore,
    ProviderError,
    Role,
    StopReason,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallStarted,
    ToolRoundStarted,
    ToolsOffered,
    builtin_executable_tools,
)

HERE = Path(__file__).resolve().parent


def provider_from_environment() -> ProviderConfig:
    """The provider the environment names; exits with a hint when it names none."""
    model = os.environ.get("TOOLPOLICY_MODEL", "").strip()
    base_url = os.environ.get("TOOLPOLICY_BASE_URL", "").strip()
    if base_url:
        if not model:
            sys.exit("Set TOOLPOLICY_MODEL to the model your server serves.")
        return ProviderConfig(
            id="self-hosted",
            name="Self-hosted",
            kind=ProviderKind.SELF_HOSTED,
            model=model,
            host=os.environ.get("TOOLPOLICY_SERVER", "VLLM"),
            hostname=base_url,
            capability_overrides={"FUNCTION_CALLING": True},
        )
    if os.environ.get("OPENAI_API_KEY"):
        return ProviderConfig("openai", "OpenAI", ProviderKind.OPEN_AI, model or "gpt-4.1-mini")
    if os.environ.get("ANTHROPIC_API_KEY"):
        return ProviderConfig(
            "anthropic", "Anthropic", ProviderKind.ANTHROPIC, model or "claude-sonnet-4-5"
        )
    sys.exit("Set TOOLPOLICY_BASE_URL (+ TOOLPOLICY_MODEL), OPENAI_API_KEY or ANTHROPIC_API_KEY.")


def show(event: object) -> None:
    if isinstance(event, ToolsOffered):
        print(f"[offered: {', '.join(event.tool_ids) or 'no tools'}]", file=sys.stderr)
    elif isinstance(event, TextDeltaEvent):
        print(event.text, end="", flush=True)
    elif isinstance(event, ToolRoundStarted):
        print(f"\n[{event.status_line}]", file=sys.stderr)
    elif isinstance(event, ToolCallStarted):
        print(f"[calling {event.display_name} with {event.arguments}]", file=sys.stderr)
    elif isinstance(event, ToolCallFinished):
        trace = event.trace
        print(f"[{trace.tool_name}: {trace.status.value} {trace.status_message}]", file=sys.stderr)
    elif isinstance(event, FinalAnswer):
        print()
        for source in event.sources:
            print(f"  source: {source.title} <{source.url}>")
        if event.stop_reason is not StopReason.COMPLETED:
            print(f"[the answer ended early: {event.stop_reason.value}]", file=sys.stderr)
        print(f"[input tokens: {event.usage.input_tokens}]", file=sys.stderr)


async def converse(first_message: str) -> None:
    policy = load_policy(
        org=[HERE / "organization"], tools=[*builtin_executable_tools(), *create_tools()]
    )
    assistant = ChatRuntime(policy)
    provider = provider_from_environment()
    chat = Chat.open("example-chat", MemoryChatStore())
    history: list[ChatMessage] = []
    message = first_message
    while message:
        history.append(ChatMessage(Role.USER, message))
        answer = ""
        async for event in assistant.respond(
            chat,
            provider,
            history,
            selected_tool_ids=["current_time", "calculator"],
            system_prompt="You are a helpful assistant. Be brief.",
        ):
            show(event)
            if isinstance(event, FinalAnswer):
                answer = event.text
        history.append(ChatMessage(Role.ASSISTANT, answer))
        message = sys.stdin.readline().strip() if not sys.stdin.isatty() else input("you> ")


def main() -> int:
    first = " ".join(sys.argv[1:]) or "What time is it in Tokyo, and what is 17% of 2340?"
    try:
        asyncio.run(converse(first))
    except (ChatRequirementError, ProviderError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    except (EOFError, KeyboardInterrupt):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
