"""A complete, minimal app embedding toolpolicy: load the policy once, answer each user message.

    python examples/embedding.py "What is (17 + 4) * 3?"

It talks to the organization's vLLM entry (examples/organization); set TOOLPOLICY_BASE_URL to
send its requests to your own OpenAI-compatible server instead, e.g. http://localhost:8000/v1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from pathlib import Path

from clock_tool import create_tools

from policy import load_policy
from runtime import (
    Chat,
    ChatMessage,
    ChatRequirementError,
    ChatRuntime,
    FinalAnswer,
    ProviderError,
    Role,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallStarted,
    builtin_executable_tools,
    open_chat_store,
)

HERE = Path(__file__).resolve().parent

# Once per configuration change: plugins, user settings and tools → one policy; one runtime.
policy = load_policy(
    org=[HERE / "organization"],
    tools=[*builtin_executable_tools(), *create_tools()],
)
assistant = ChatRuntime(policy)
chats = open_chat_store()  # $TOOLPOLICY_CHAT_DB, else chats.sqlite3 in the user's data folder


async def answer(chat_id: str, history: list[ChatMessage]) -> str:
    """One user message (the last of `history`): stream the answer, show the tool calls."""
    provider = policy.provider("Example Corp vLLM")
    if base_url := os.environ.get("TOOLPOLICY_BASE_URL"):
        provider = dataclasses.replace(provider, hostname=base_url)
    chat = Chat.open(chat_id, chats)  # remembers what earlier tool results demanded
    async for event in assistant.respond(
        chat,
        provider,
        history,
        selected_tool_ids=["current_time", "calculator"],
        system_prompt="You are Example Corp's assistant.",
    ):
        if isinstance(event, TextDeltaEvent):
            print(event.text, end="", flush=True)
        elif isinstance(event, ToolCallStarted):
            print(f"\n[{event.display_name} {event.arguments}]", file=sys.stderr)
        elif isinstance(event, ToolCallFinished):
            print(f"[{event.trace.tool_name}: {event.trace.status.value}]", file=sys.stderr)
        elif isinstance(event, FinalAnswer):
            print()
            return event.text
    return ""


def main() -> int:
    question = " ".join(sys.argv[1:]) or "What is (17 + 4) * 3?"
    try:
        asyncio.run(answer("example-chat", [ChatMessage(Role.USER, question)]))
    except (ChatRequirementError, ProviderError) as error:
        print(f"Error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
