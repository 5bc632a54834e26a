"""How an app (or a test) replaces the resolver, address classifier or TLS context of web retrieval.

Passed to the runtime as an object in the tools' services, never through settings or model
arguments, so nothing a model writes can change how addresses are checked.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.web.retrieval import AddressClassifier, Resolver


@dataclass(frozen=True, slots=True)
class RetrievalOverrides:
    """Replacements for how retrieval resolves, classifies and verifies; code only, never data."""

    resolver: Resolver | None = None
    classify_address: AddressClassifier | None = None
    ssl_context: ssl.SSLContext | None = None
