"""A call that waits for a person's approval: the turn stops before it, a person answers, the
same turn goes on.

    OPENAI_API_KEY=sk-... python examples/approvals.py "What is 17% of 2340?"
    TOOLPOLICY_BASE_URL=http://localhost:8000/v1 TOOLPOLICY_MODEL=... python examples/approvals.py

The provider is picked as in examples/chat.py. examples/approvals/plugin.lua (a local plugin)
makes every calculator call wait for approval; the answer is read from the terminal.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from chat import provider_from_environment, show
from clock_tool import create_tools

from policy import load_policy
from policy.configuration import ProviderConfig
from runtime import (
    Approval,
    Chat,
    ChatMessage,
    ChatRuntime,
    FinalAnswer,
    MemoryChatStore,
    PendingApproval,
    Role,
    StopReason,
)

HERE = Path(__file__).resolve().parent


def ask(pending: PendingApproval) -> bool:
    """The person's answer, read from the terminal (anything but y is no)."""
    print(f"[{pending.reason}]", file=sys.stderr)
    reply = input(f"Allow {pending.tool_id} {pending.arguments_text}? [y/N] ")
    return reply.strip().lower() in ("y", "yes")


async def answer(
    assistant: ChatRuntime, chat: Chat, provider: ProviderConfig, messages: list[ChatMessage]
) -> None:
    final = None
    async for event in assistant.respond(chat, provider, messages):
        show(event)
        final = event
    while isinstance(final, FinalAnswer) and final.stop_reason is StopReason.APPROVAL_REQUIRED:
        answers = {
            p.call_id: Approval(ask(p), by="alice", arguments_sha256=p.arguments_sha256)
            for p in final.pending_approvals
        }
        async for event in assistant.respond(chat, provider, messages, approvals=answers):
            show(event)
            final = event


async def main(question: str) -> None:
    policy = load_policy(
        org=[HERE / "organization"], local=[HERE / "approvals"], tools=create_tools()
    )
    async with ChatRuntime(policy) as assistant:
        chat = Chat.open("approvals-example", MemoryChatStore())
        messages = [ChatMessage(Role.USER, question)]
        await answer(assistant, chat, provider_from_environment(), messages)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What is 17% of 2340? Use the calculator."))
