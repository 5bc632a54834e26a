"""Source rewriting that lets the sandbox know on which line every table field was written.

Lua gives no runtime hook for table constructors, so each constructor `{...}` is wrapped in a call
to a tracking helper, and each bracketed key `[expr]` in a constructor in a key-recording helper.
Edits never add or remove line breaks, so Lua's own line numbers stay those of the file. The
static part (which field of which constructor sits on which line) is emitted as a small Lua chunk.
"""

from __future__ import annotations

import re
from functools import lru_cache

from policy._dataclass import dataclass

_CTOR_HELPER = "__tp_C"
_OPEN_HELPER = "__tp_O"
_KEY_HELPER = "__tp_K"

_KEYWORDS = frozenset(
    {
        *("and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto"),
        *("if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true"),
        *("until", "while"),
    }
)
_BLOCK_OPENERS = frozenset({"function", "if", "do", "repeat"})
_BLOCK_CLOSERS = frozenset({"end", "until"})

_TOKEN = re.compile(
    r"""
      --\[(?P<lcomment>=*)\[
    | --[^\n]*
    | \[(?P<lstring>=*)\[
    | (?P<quote>["'])
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*)
    | (?P<op>==|~=|<=|>=|::|\.\.\.?|[{}\[\]();,=])
    """,
    re.VERBOSE,
)

# Token kinds used below.
_NAME, _KEYWORD, _STRING, _OP, _OTHER = "name", "keyword", "string", "op", "other"

NO_CONSTRUCTORS = "return {},{}"
_FIELD_POSITIONAL = 0
_FIELD_BRACKET = 1


@dataclass(frozen=True, slots=True)
class _PreparedChunk:
    """A chunk ready for the sandbox: rewritten text plus the constructor table (as Lua source).

    `source` is None when the text could not be tokenized; the sandbox then compiles the original
    text, which yields Lua's own syntax error message. `constructors_lua` returns two tables: per
    constructor `{file, line, closing line, field code, field line, ...}` (code 0 = positional, 1 = `[expr]`,
    or the field name), and `{[last line] = first line}` for statements whose multi-line long
    string makes Lua report the line where the string ends.
    """

    source: str | None
    constructors_lua: str
    constructor_count: int


@dataclass(slots=True)
class _Token:
    """One token of the Lua source: its kind, its text where it matters, its span."""

    kind: str
    text: str
    start: int
    end: int


@dataclass(slots=True)
class _Frame:
    """An open bracket or block while scanning: what opened it and the table fields seen."""

    opener: str
    constructor: int = 0
    at_field_start: bool = False
    fields: list[str] | None = None
    is_key: bool = False


def normalize_newlines(text: str) -> str:
    """Lua counts CR, LF and CRLF as one line break each; Python counts only LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


# Between constructors only `{` matters, plus whatever could hide one (strings, comments).
_OUTSIDE = re.compile(
    r"""--\[(?P<lcomment>=*)\[|--[^\n]*|\[(?P<lstring>=*)\[|(?P<quote>["'])|(?P<open>\{)"""
)
_STRING_STOP = {'"': re.compile(r'["\\\n]'), "'": re.compile(r"['\\\n]")}
_SPACE = re.compile(r"\s*")


def _short_string_end(text: str, pos: int, quote: str) -> int | None:
    """End of a quoted string whose body starts at `pos`; a plain loop, linear on any input."""
    stop = _STRING_STOP[quote].search
    while True:
        match = stop(text, pos)
        if match is None or match.group() == "\n":
            return None
        if match.group() == quote:
            return match.end()
        pos = match.end() + 1  # the escaped character
        if text.startswith("z", match.end()):
            space = _SPACE.match(text, pos)
            pos = space.end() if space else pos


def _tokenize(text: str) -> list[_Token] | None:
    """Tokens inside table constructors, plus the long strings between them."""
    tokens: list[_Token] = []
    pos = 0
    length = len(text)
    depth = 0
    while pos < length:
        match = (_TOKEN if depth else _OUTSIDE).search(text, pos)
        if match is None:
            break
        start, end = match.span()
        group = match.lastgroup
        if group == "lcomment" or group == "lstring":
            closer = "]" + (match.group(group) or "") + "]"
            close_at = text.find(closer, end)
            if close_at < 0:
                return None
            end = close_at + len(closer)
            if group == "lstring":
                tokens.append(_Token(_STRING, "long", start, end))
        elif group == "quote":
            string_end = _short_string_end(text, end, match.group(group))
            if string_end is None:
                return None
            end = string_end
            tokens.append(_Token(_STRING, "", start, end))
        elif group == "name":
            word = match.group(group)
            tokens.append(_Token(_KEYWORD if word in _KEYWORDS else _NAME, word, start, end))
        elif group == "number":
            tokens.append(_Token(_OTHER, "", start, end))
        elif group == "op":
            op = match.group(group)
            tokens.append(_Token(_OP, op, start, end))
            if op == "{":
                depth += 1
            elif op == "}":
                depth -= 1
                if depth < 0:
                    return None
        elif group == "open":
            tokens.append(_Token(_OP, "{", start, end))
            depth = 1
        pos = end
    return tokens


def _stack_has_brackets(stack: list[_Frame]) -> bool:
    return any(frame.opener != "block" for frame in stack)


@lru_cache(maxsize=64)
def prepare_chunk(text: str, file_index: int, first_constructor: int) -> _PreparedChunk:
    """Rewrite `text` (already newline-normalized); constructors are numbered from `first_constructor`."""
    tokens = _tokenize(text)
    if tokens is None:
        return _PreparedChunk(None, NO_CONSTRUCTORS, 0)
    edits: list[tuple[int, str]] = []
    constructors: list[str] = []
    stack: list[_Frame] = []
    line = 1
    line_pos = 0
    line_fixes: list[str] = []

    def line_at(pos: int) -> int:
        nonlocal line, line_pos
        line += text.count("\n", line_pos, pos)
        line_pos = pos
        return line

    for index, token in enumerate(tokens):
        top = stack[-1] if stack else None
        if top is not None and top.opener == "{" and top.at_field_start:
            top.at_field_start = False
            if not (token.kind == _OP and token.text in ("}", ",", ";")):
                fields = top.fields
                assert fields is not None
                field_line = line_at(token.start)
                if token.kind == _OP and token.text == "[":
                    fields.append(f"{_FIELD_BRACKET},{field_line}")
                elif (
                    token.kind == _NAME
                    and index + 1 < len(tokens)
                    and tokens[index + 1].kind == _OP
                    and tokens[index + 1].text == "="
                ):
                    fields.append(f'"{token.text}",{field_line}')
                else:
                    fields.append(f"{_FIELD_POSITIONAL},{field_line}")
                if token.kind == _OP and token.text == "[":
                    stack.append(_Frame("[", is_key=True))
                    edits.append((token.end, f"{_KEY_HELPER}("))
                    continue
        if token.kind == _OP:
            op = token.text
            if op == "{":
                number = first_constructor + len(constructors) + 1
                constructors.append("")
                stack.append(
                    _Frame(
                        "{",
                        constructor=number,
                        at_field_start=True,
                        fields=[],
                    )
                )
                ctor_line = line_at(token.start)
                constructors[-1] = f"{file_index},{ctor_line}"
                # `(helper(...))` is valid both as an expression and as the argument of
                # `f{...}`, so the constructor's context never needs to be known.
                edits.append((token.start, f"({_CTOR_HELPER}({_OPEN_HELPER}(),{number},"))
            elif op in ("(", "["):
                stack.append(_Frame(op))
            elif op in ("}", ")", "]"):
                expected = {"}": "{", ")": "(", "]": "["}[op]
                if not stack or stack[-1].opener != expected:
                    return _PreparedChunk(None, NO_CONSTRUCTORS, 0)
                frame = stack.pop()
                if op == "}":
                    fields = frame.fields or []
                    slot = frame.constructor - first_constructor - 1
                    close_line = str(line_at(token.start))
                    constructors[slot] = ",".join([constructors[slot], close_line, *fields])
                    edits.append((token.end, "))"))
                elif frame.is_key:
                    edits.append((token.start, ")"))
            elif op in (",", ";") and top is not None and top.opener == "{":
                top.at_field_start = True
        elif token.kind == _STRING and token.text == "long" and not _stack_has_brackets(stack):
            first = line_at(token.start)
            last = first + text.count("\n", token.start, token.end)
            if last > first:
                line_fixes.append(f"[{last}]={first}")
        elif token.kind == _KEYWORD:
            if token.text in _BLOCK_OPENERS:
                stack.append(_Frame("block"))
            elif token.text in _BLOCK_CLOSERS:
                if not stack or stack[-1].opener != "block":
                    return _PreparedChunk(None, NO_CONSTRUCTORS, 0)
                stack.pop()

    if stack:
        return _PreparedChunk(None, NO_CONSTRUCTORS, 0)
    pieces: list[str] = [
        f"local {_CTOR_HELPER},{_OPEN_HELPER},{_KEY_HELPER}=...;return(function(...) "
    ]
    cursor = 0
    for pos, insert in sorted(edits, key=lambda edit: edit[0]):
        pieces.append(text[cursor:pos])
        pieces.append(insert)
        cursor = pos
    pieces.append(text[cursor:])
    pieces.append("\nend)(select(4,...))")
    table = (
        "return {"
        + ",".join("{" + entry + "}" for entry in constructors)
        + "},{"
        + ",".join(line_fixes)
        + "}"
    )
    return _PreparedChunk("".join(pieces), table, len(constructors))
