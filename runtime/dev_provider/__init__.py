"""A scripted stand-in for a model server, to try `policy chat` without an account or a network.

`python -m runtime.dev_provider` serves, on 127.0.0.1, OpenAI's Chat Completions and Responses
and Anthropic's Messages, streamed as the runtime asks for them. It is not a model: it answers
by a tiny script (`script.py`), so a first chat shows a tool call, the policy's decision on it
and an approval on a fresh machine. Its stream events (`events.py`) are the ones the tests'
loopback provider writes, one writer of the wire format for both.
"""

from __future__ import annotations

from runtime.dev_provider.script import STAND_IN_NOTE
from runtime.dev_provider.server import DEFAULT_PORT, main

__all__ = ["DEFAULT_PORT", "STAND_IN_NOTE", "main"]
