"""What a decision record keeps of an error message and an address: secrets, user info and
parameter values masked, text bounded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from policy._runtime_seam import without_user_info

if TYPE_CHECKING:
    from runtime.executor import ToolCallOutcome


_ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redacted_error_message(message: str, secrets: Sequence[str] = ()) -> str:
    """An error message fit for a log: known secrets masked in every spelling
    (`policy.redaction.SecretMask`), every address shown without user
    info, fragment or parameter values, well-formed and bounded as traces keep text
    (`runtime.trace_text.bounded_text`)."""
    from policy._runtime_seam import SecretMask
    from runtime.trace_text import bounded_text
    from runtime.web.addresses import redact_url_for_log

    message = SecretMask.of(secrets).text(message)
    message = _ADDRESS.sub(lambda m: redact_url_for_log(m.group(0)), message)
    return bounded_text(without_user_info(" ".join(message.split())))


def _cited(outcome: ToolCallOutcome | None) -> list[str]:
    """The addresses a result cited, as logs show them (`redact_url_for_log`)."""
    if outcome is None or not outcome.sources:
        return []
    from runtime.web.addresses import redact_url_for_log

    return [redact_url_for_log(source.url) for source in outcome.sources]
