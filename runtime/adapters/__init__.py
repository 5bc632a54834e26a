"""One adapter per wire API (Chat Completions, Responses, Anthropic Messages), each translating
one streaming call's conversation to and from the shared message model.

The adapter classes load on first use, so a process that speaks one API never imports the others;
`create_adapter(client, conversation, model)` picks the one that speaks the client's wire API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy._runtime_seam import lazy_attributes
from runtime.adapters.base import ToolCallingAdapter

if TYPE_CHECKING:
    from runtime.adapters.anthropic import AnthropicAdapter
    from runtime.adapters.chat_completions import ChatCompletionsAdapter
    from runtime.adapters.factory import create_adapter
    from runtime.adapters.responses import ResponsesAdapter

_MODULE_OF = {
    "AnthropicAdapter": "runtime.adapters.anthropic",
    "ChatCompletionsAdapter": "runtime.adapters.chat_completions",
    "ResponsesAdapter": "runtime.adapters.responses",
    "create_adapter": "runtime.adapters.factory",
}


__all__ = [
    "AnthropicAdapter",
    "ChatCompletionsAdapter",
    "ResponsesAdapter",
    "ToolCallingAdapter",
    "create_adapter",
]

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _MODULE_OF, __all__)
