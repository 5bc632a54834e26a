"""Cut Markdown that is too long for a tool result, at a paragraph or line break where possible."""

from __future__ import annotations

TRUNCATION_MARKER = "[Page content truncated]"
_SEPARATOR = "\n\n"


def truncate_markdown(markdown: str, max_characters: int) -> str:
    """Return `markdown` unchanged when it fits, else a cut version ending in the marker.

    The result is never longer than `max_characters`; below the room the marker needs (26) the
    text is cut hard without it. The break prefers the last blank line,
    then the last line break, as long as it keeps at least half of the room; otherwise it cuts hard.
    """
    if max_characters < 0:
        raise ValueError(f"max_characters must be 0 or more, but it was {max_characters}.")
    if len(markdown) <= max_characters:
        return markdown
    limit = max_characters - len(TRUNCATION_MARKER) - len(_SEPARATOR)
    if limit < 0:
        return markdown[:max_characters]
    position = markdown.rfind("\n\n", 0, limit)
    if position < limit / 2:
        position = markdown.rfind("\n", 0, limit)
    if position < limit / 2:
        position = limit
    return markdown[:position].rstrip() + _SEPARATOR + TRUNCATION_MARKER
