"""The contract between the shared loop and one provider API's adapter.

An adapter is stateful: it belongs to one streaming call (one user message) and is never shared.
It starts from a `Conversation`, remembers every round it recorded, and resends them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runtime.messages import AdapterEvent


@dataclass(frozen=True, slots=True)
class RecordedTurns:
    """What an adapter recorded after the conversation it started from, in its wire format:
    kept with a turn that waits for approval, so another adapter (in another process) resumes
    it where it stopped."""

    wire_json: tuple[str, ...]
    texts: tuple[str, ...]


class _ResumableAdapter(Protocol):
    """An adapter whose recorded turns can be kept and given to a fresh one (every built-in
    adapter); a turn waits for approval only through such an adapter."""

    def recorded_turns(self) -> RecordedTurns:
        """Everything recorded so far (tool results still queued included)."""
        ...

    def restore_turns(self, turns: RecordedTurns) -> None:
        """Continue after `turns`, recorded by an adapter of the same kind over the same
        conversation."""
        ...


@runtime_checkable
class ToolCallingAdapter(Protocol):
    """One wire API's side of the loop: send a round, stream it, and record what goes back."""

    def execute_round(
        self, final_response_instruction: str | None, include_tools: bool
    ) -> AsyncIterator[AdapterEvent]:
        """Send one request and stream it: any TextDeltas, then exactly one RoundCompleted.

        `final_response_instruction` is appended to the system prompt for this round only; with
        `include_tools` False the request offers no tools. A stream that ends without
        RoundCompleted is a failed round (the error was already raised or reported).
        """
        ...

    def record_assistant_turn(self) -> None:
        """Record the model's turn of the last round exactly as it came (reasoning, thinking...)."""
        ...

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        """Record one tool result for the next request (grouped as the wire format requires)."""
        ...

    @property
    def recorded_request_texts(self) -> Sequence[str]:
        """Everything recorded so far that later rounds resend (for live token counting)."""
        ...
