"""The built-in structural prompt-injection filter.

It removes passages instead of rejecting a text, and puts a visible marker in their place.
Matching runs over a *view* of the text in which JSON `\\uXXXX` escapes and HTML/XML character
references are decoded, invisible characters are dropped and scrambled keywords are restored,
because a model reads the text that way; removals are applied to the original text, so escapes
outside a removed passage stay as they were. Every pattern is precompiled and linear-time.
"""

from __future__ import annotations

import base64
import binascii
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from html.entities import html5

from runtime.web._agent_signals import (
    SIGNAL_WORDS,
    Signal,
    find_signals,
    is_shown,
    requests_action,
    shown_not_said,
)
from runtime.web._anchored import (
    AnchorIndex,
    Anchors,
    WordFinder,
    WordGates,
    joined_runs,
    letter_marks,
)
from runtime.web._anchored import finditer as anchored
from runtime.web._document_shapes import filter_fields
from runtime.web._prose_layout import ProseLayout, layout_of
from runtime.web.guard import (
    MAX_LISTED_FINDINGS,
    NO_FILTER_CONTEXT,
    FilterContext,
    FilterResult,
    Finding,
)

REMOVAL_MARKER = "[toolpolicy removed suspicious content here]"

MAX_SNIPPET_CHARACTERS = 240
MAX_DECODED_CARRIERS = 12
"""Readable base64 or hex carriers decoded per kind and text."""
MAX_DECODED_CHARACTERS = 12_000
_CLAUSE_REACH = 400
"""How far back a passage may start before its signal (to the start of the signal's sentence)."""

_S = r"[\s*_~`>|\-]+"
"""Word separator: whitespace plus the Markdown emphasis attackers wrap words in."""
_SB = r"[\s*_~`>|\-]{1,8}"
"""A separator before a rule's anchor: bounded, so that every match holds an anchor within the
rule's `lead` characters of its start, which is all `_anchored` tries (more padding than this
between two words of a phrase hides it from these rules)."""

_AI = r"(?:ai|a\.i\.|llms?|language\s+models?|assistants?|ai\s+assistants?|chatbots?|agents?|ai\s+agents?|gpt|chatgpt|claude|copilot)"
_QUALIFIER = r"(?:previous|prior|above|earlier|preceding|former|original|initial|system|developer|safety|your|my)"
_RULE_NOUN = r"(?:instructions?|prompts?|directions|directives|guidelines|rules|guardrails|constraints|programming|context)"


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_QUALIFIER_WORDS = _words(
    "previous prior above earlier preceding former original initial system developer safety your my"
)
_RULE_NOUN_WORDS = _words(
    "instruction instructions prompt prompts directions directives guidelines rules guardrails "
    "constraints programming context"
)
_AI_WORDS = _words(
    "ai llm llms language assistant assistants chatbot chatbots agent agents gpt chatgpt claude "
    "copilot"
)


@dataclass(frozen=True, slots=True)
class _Rule:
    """A phrase rule. It runs only when the text holds a word of each of its `words` groups, or
    one of its `markers` verbatim: cheap set lookups that spare ordinary text most regex passes."""

    rule_id: str
    category: str
    pattern: str
    words: tuple[frozenset[str], ...] = ()
    markers: tuple[str, ...] = ()
    whole_sentence: bool = True
    anchors: tuple[str, ...] = ()
    """Substrings of the lowercased text, one of which every match holds within `lead`
    characters of its start (`_anchored`)."""
    lead: int = 0
    anchor_set: Anchors | None = field(init=False, repr=False, compare=False)
    marker_groups: tuple[tuple[str, tuple[str, ...]], ...] = field(
        init=False, repr=False, compare=False
    )
    """The markers by their first character, which a one-character search (memchr) finds far
    faster than a marker: text without that character cannot hold any marker of its group."""

    def __post_init__(self) -> None:
        groups: dict[str, list[str]] = {}
        for marker in self.markers:
            groups.setdefault(marker[0], []).append(marker)
        grouped = tuple((first, tuple(group)) for first, group in groups.items())
        object.__setattr__(self, "marker_groups", grouped)
        object.__setattr__(self, "anchor_set", Anchors.of(self.anchors) if self.anchors else None)


_RULES: tuple[_Rule, ...] = (
    _Rule(
        "ignore_previous_instructions",
        "override",
        rf"\b(?:ignore|disregard|forget|override|bypass|neglect)\b{_S}"
        rf"(?:(?:all|any|every|the|of|these|those|everything|and)\b{_S}){{0,3}}"
        rf"{_QUALIFIER}\b{_S}(?:[a-z]+{_S}){{0,2}}?{_RULE_NOUN}\b",
        words=(
            _words("ignore disregard forget override bypass neglect"),
            _QUALIFIER_WORDS,
            _RULE_NOUN_WORDS,
        ),
        anchors=("ignore", "disregard", "forget", "override", "bypass", "neglect"),
        lead=0,
    ),
    _Rule(
        "ignore_the_above",
        "override",
        rf"\b(?:ignore|disregard|forget)\b{_S}(?:(?:all|everything|anything|the|of){_S}){{0,2}}"
        rf"(?:(?:written|said|stated|text){_S})?(?:above|before|prior|previously)\b"
        r"(?=\s*(?:and\b|then\b|[,.;:!]|$))",
        words=(_words("ignore disregard forget"), _words("above before prior previously")),
        anchors=("ignore", "disregard", "forget"),
        lead=0,
    ),
    _Rule(
        "forget_everything",
        "override",
        rf"\bforget\b{_S}(?:everything|all)\b{_S}(?:(?:you|that|have|has|been|were|was|i)\b{_S}){{0,3}}"
        r"(?:told|said|instructed|learned|learnt|above|before|previously)\b",
        words=(_words("forget"), _words("everything all")),
        anchors=("forget",),
        lead=0,
    ),
    _Rule(
        "stop_following_instructions",
        "override",
        rf"\b(?:do{_SB}not|don'?t|never|stop)\b{_SB}(?:follow(?:ing)?|obey(?:ing)?)\b{_S}"
        rf"(?:(?:any|the)\b{_S})?{_QUALIFIER}\b{_S}(?:[a-z]+{_S}){{0,2}}?{_RULE_NOUN}\b",
        words=(_words("follow following obey obeying"), _QUALIFIER_WORDS, _RULE_NOUN_WORDS),
        anchors=("follow", "following", "obey", "obeying"),
        lead=40,
    ),
    _Rule(
        "new_instructions",
        "override",
        rf"\byour{_SB}(?:new|real|actual|true|updated){_SB}(?:instructions|rules|system{_S}prompt|persona)\b{_S}(?:is|are)\b"
        rf"|\b(?:new|updated|revised){_SB}system{_S}(?:prompt|instructions?|message)\s*:",
        words=(
            _words("new real actual true updated revised"),
            _words("your system"),
            _words("instructions rules system persona"),
        ),
        anchors=("instructions", "rules", "system", "persona"),
        lead=40,
    ),
    _Rule(
        "you_are_now",
        "role_override",
        rf"\byou{_SB}are{_SB}now\b{_S}(?:(?:an?|in|the|a{_S}completely|an{_S}entirely)\b{_S})?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan\b|developer\s+mode|god\s+mode|"
        r"free\s+(?:from|of)\s+(?:all\s+|any\s+|your\s+)?(?:rules|restrictions|guidelines|filters|constraints)|not\s+bound)"
        rf"|\byou{_SB}are{_SB}no{_SB}longer\b{_S}(?:an?{_S}(?:ai|assistant|language{_S}model)\b|"
        rf"(?:bound|restricted|limited){_S}by{_S}(?:your|any|the)?{_S}?(?:rules|guidelines|instructions|policies|restrictions|programming)|"
        rf"required{_S}to{_S}follow{_S}(?:your|the|any){_S}(?:rules|guidelines|instructions|policies))",
        words=(_words("you"), _words("are"), _words("now longer")),
        anchors=("now", "longer"),
        lead=32,
    ),
    _Rule(
        "from_now_on",
        "role_override",
        rf"\bfrom{_SB}now{_S}on\b[\s,]*you{_S}(?:are|will|must|shall|should)\b{_S}(?:only{_S})?"
        r"(?:act|behave|ignore|disregard|pretend|roleplay|obey|follow\s+my|"
        r"(?:respond|answer|reply|speak|talk)\s+(?:only\s+)?(?:as|like)\b)",
        words=(_words("from"), _words("now"), _words("you")),
        anchors=("now",),
        lead=12,
    ),
    _Rule(
        "act_as_unrestricted",
        "role_override",
        rf"\b(?:act|behave|respond|roleplay)\b{_SB}as{_SB}(?:if{_SB}you{_SB}(?:are|were){_SB})?(?:an?{_SB})?"
        r"(?:unrestricted|unfiltered|uncensored|jailbroken|evil|dan)\b"
        rf"|\bpretend{_S}(?:that{_S})?you{_S}(?:are|have){_S}(?:no{_S}(?:rules|restrictions|guidelines|filters)|not{_S}an{_S}ai|an?{_S}(?:unrestricted|unfiltered|evil))",
        words=(_words("unrestricted unfiltered uncensored jailbroken evil dan pretend"),),
        anchors=(
            "unrestricted",
            "unfiltered",
            "uncensored",
            "jailbroken",
            "evil",
            "dan",
            "pretend",
        ),
        lead=70,
    ),
    _Rule(
        "jailbreak_mode",
        "jailbreak",
        rf"\b(?:enable|activate|enter|switch{_SB}to)\b{_SB}(?:god|dan|jailbreak|jailbroken|unrestricted){_S}mode\b"
        rf"|\b(?:dan|jailbreak|god){_S}mode{_S}(?:enabled|activated|on)\b"
        rf"|\bdo{_SB}anything{_S}now\b",
        words=(_words("mode anything"), _words("god dan jailbreak jailbroken unrestricted now")),
        anchors=("god", "dan", "jailbreak", "jailbroken", "unrestricted", "anything"),
        lead=24,
    ),
    _Rule(
        "reveal_system_prompt",
        "exfiltration",
        rf"\b(?:reveal|print|repeat|output|show|display|leak|disclose|dump|tell{_S}me|give{_S}me)\b{_S}(?:me{_S})?"
        rf"(?:your{_S}(?:(?:full|entire|complete|hidden|secret|exact|initial|original|verbatim){_S}){{0,2}}"
        rf"(?:system{_S}(?:prompt|message|instructions)|instructions|developer{_S}message)"
        rf"|the{_S}(?:(?:full|entire|complete|exact){_S})?(?:hidden|secret|initial|original|verbatim){_S}"
        rf"(?:system{_S}(?:prompt|message)|instructions|developer{_S}message))\b",
        words=(
            _words("reveal print repeat output show display leak disclose dump tell give"),
            _words("system hidden initial original developer instructions"),
            _words("prompt message instructions"),
        ),
        anchors=(
            *("reveal", "print", "repeat", "output", "show", "display", "leak", "disclose"),
            *("dump", "tell", "give"),
        ),
        lead=0,
    ),
    _Rule(
        "send_conversation",
        "exfiltration",
        rf"\b(?:send|forward|email|e-mail|post|upload|transmit|exfiltrate|leak)\b{_S}"
        rf"(?:(?:the|this|all|your|our|my|user'?s?|any|entire|full|whole|complete|previous|current){_S}){{0,3}}"
        rf"(?:conversation|chat(?:{_S}(?:history|log|transcript))?|previous{_S}messages|system{_S}prompt|memory|context{_S}window|"
        rf"api{_S}keys?|credentials|passwords?|secrets?|access{_S}tokens?|session{_S}cookies?|personal{_S}data)\b{_S}to{_S}"
        rf"(?:https?://|[\w.+-]+@[\w-]+\.|me\b|us\b|this{_S}(?:url|address|email|endpoint|server|site)|the{_S}following{_S}(?:url|address|email|endpoint))"
        rf"|\b(?:exfiltrate|leak)\b{_S}(?:(?:the|this|all|your|our|my|user'?s?|entire|full|whole|complete|previous|current){_S}){{0,3}}"
        rf"(?:conversation|chat{_S}history|previous{_S}messages|system{_S}prompt|context{_S}window)\b",
        words=(
            _words("send forward email mail post upload transmit exfiltrate leak"),
            _words(
                "conversation chat previous system memory context api key keys credentials "
                "password passwords secret secrets access session personal"
            ),
        ),
        anchors=(
            "send",
            "forward",
            "email",
            "e-mail",
            "post",
            "upload",
            "transmit",
            "exfiltrate",
            "leak",
        ),
        lead=0,
    ),
    _Rule(
        "message_to_ai",
        "agent_manipulation",
        rf"\b(?:note|message|instructions?|attention|important|notice)\b{_SB}(?:to|for)\b{_SB}"
        rf"(?:(?:the|any|all|every)\b{_SB})?{_AI}\b\s*[:!,\-]"
        rf"|\bif{_SB}you{_SB}are{_SB}an?{_SB}{_AI}\b(?:[\s,]+(?:reading|processing|summari[sz]ing|browsing|visiting|parsing|analy[sz]ing|crawling)\b|\s*,)"
        rf"|\b(?:dear|hey|attention|hello|hi)\b{_SB}{_AI}\b\s*[:!,]",
        words=(
            _AI_WORDS | _words("model models"),
            _words(
                "note message instruction instructions attention important notice if dear hey "
                "hello hi"
            ),
        ),
        anchors=(
            # every match starts with one of these words: it is tried only there
            *("note", "message", "instruction", "instructions", "attention", "important"),
            *("notice", "if", "dear", "hey", "hello", "hi"),
        ),
        lead=0,
    ),
    _Rule(
        "remember_for_future",
        "persistence",
        rf"\b(?:remember|memori[sz]e|store|save|keep)\b{_S}(?:this|these|the{_S}following)\b{_S}(?:(?:instructions?|rules?){_S})?"
        rf"(?:for|in|across|during)\b{_S}(?:all{_S})?(?:future|subsequent|later|every|next)\b{_S}"
        r"(?:conversations?|sessions?|chats?|responses?|interactions?|messages?)\b"
        rf"|\b(?:add|save|write|store)\b{_SB}(?:this|the{_SB}following)\b{_SB}(?:(?:instruction|rule){_SB})?"
        rf"(?:to|in|into)\b{_SB}your{_SB}(?:memory|long{_SB}term{_SB}memory|persistent{_SB}memory)\b",
        words=(
            _words("remember memorize memorise store save keep add write"),
            _words("future subsequent later every next memory"),
            _words(
                "conversation conversations session sessions chat chats response responses "
                "interaction interactions message messages memory"
            ),
        ),
        anchors=("remember", "memorize", "memorise", "store", "save", "keep", "memory"),
        lead=110,
    ),
    _Rule(
        "fake_chat_delimiter",
        "delimiter_evasion",
        r"<\|(?:im_start|start_header_id)\|>[ \t]*(?:system|user|assistant|developer|tool)\b"
        r"(?:<\|end_header_id\|>)?[ \t]*(?:\n|[a-z])"
        r"|<\|(?:system|user|assistant)\|>[ \t]*\n?[ \t]*[a-z]"
        r"|\[inst\][ \t]*[a-z]|<<sys>>[ \t]*\n?[ \t]*[a-z]|<start_of_turn>(?:user|model|system)\b",
        anchors=("<|", "[inst]", "<<sys>>", "<start_of_turn>"),
        lead=0,
    ),
    _Rule(
        "fake_chat_delimiter",
        "delimiter_evasion",
        r"^[ \t]{0,8}(?:#{1,6}[ \t]{0,8})?(?:system|assistant)[ \t]+(?:prompt|message|override|instructions?)[ \t]*:"
        r"|^[ \t]{0,8}#{1,6}[ \t]{0,8}(?:system|instruction|response)[ \t]*:[ \t]*$",
        words=(_words("system assistant instruction response"),),
        markers=(":",),
        anchors=("system", "assistant", "instruction", "response"),
        lead=24,
    ),
    _Rule(
        "fake_role_markup",
        "markup_evasion",
        r"</?(?:system[_\- ]?(?:prompt|message|instructions?)|im_start|im_end|"
        r"assistant[_\-](?:response|message|instructions?)|admin[_\-]?(?:override|instructions?)|"
        r"developer[_\-](?:message|instructions?))[ \t]*/?>",
        anchors=(
            "<system",
            "</system",
            "<im_",
            "</im_",
            "<assistant",
            "</assistant",
            "<admin",
            "</admin",
            "<developer",
            "</developer",
        ),
        lead=0,
    ),
)

_COMPILED_RULES: tuple[tuple[_Rule, re.Pattern[str]], ...] = tuple(
    (rule, re.compile(rf"(?<![a-z0-9])(?:{rule.pattern})", re.MULTILINE)) for rule in _RULES
)
"""Matched against lowercased text: much faster than IGNORECASE, and the gate skips mid-word starts."""
_RULE_GATES = WordGates.of([rule.words for rule in _RULES])
_WORD_FINDER = WordFinder.of(
    [word for rule in _RULES if rule.anchor_set for word in rule.anchor_set.words] + SIGNAL_WORDS
)
"""The word anchors of the phrase and signal rules, found in one pass per text."""

_LETTER_SPACED = re.compile(r"(?<![A-Za-z])[A-Za-z](?:[ \t._\-*·|/]{1,3}[A-Za-z]){2,}(?![A-Za-z])")
_SPACED_KEYWORD_LIST = (
    "ignore",
    "disregard",
    "instruction",
    "systemprompt",
    "jailbreak",
    "override",
    "forget",
    "previous",
    "bypass",
)
_SPACED_KEYWORDS = re.compile("|".join(_SPACED_KEYWORD_LIST))
_SPACED_SEPARATOR = r"[ \t._\-*·|/]{1,3}"
_SPACED_OPENINGS = tuple(
    re.compile(_SPACED_SEPARATOR.join(keyword[:3])) for keyword in _SPACED_KEYWORD_LIST
)
_SPACED_LETTERS = WordGates.of(
    [[frozenset(letter) for letter in set(keyword)] for keyword in _SPACED_KEYWORD_LIST]
)
"""A letter-spaced keyword shows each of its letters as a one-letter word, and its first three
letters spaced: cheap preconditions (the letters among the text's words, one search with a
literal start) for the letter-spaced pattern, which is tried at every letter."""

_BASE64_CHARACTER = r"[A-Za-z0-9+/_\-]"
"""The base64 alphabet, the URL-safe one's `-` and `_` included."""
_MIN_CARRIER_RUN = 16
_BASE64_CANDIDATE = re.compile(
    rf"(?<![A-Za-z0-9+/=_\-]){_BASE64_CHARACTER}{{{_MIN_CARRIER_RUN},}}={{0,2}}(?![A-Za-z0-9+/=_\-])"
)
_CARRIER_RUN = b"c" * _MIN_CARRIER_RUN
_AS_CARRIER_CHARACTERS = bytes(
    0x63 if re.fullmatch(_BASE64_CHARACTER, chr(byte)) else 0x20 for byte in range(256)
)
_HEX_DIGITS = re.compile(r"(?:[0-9A-Fa-f]{2}){8,}")
_HEX_PART = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{16,}(?![0-9A-Za-z])")
_ESCAPED_HEX_CANDIDATE = re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}")

_TYPO_KEYWORDS = (
    "ignore",
    "disregard",
    "previous",
    "instructions",
    "override",
    "bypass",
    "system",
    "prompt",
    "reveal",
    "jailbreak",
    "forget",
)
_TYPO_INDEX = {(kw[0], kw[-1], len(kw), "".join(sorted(kw[1:-1]))): kw for kw in _TYPO_KEYWORDS}
_TYPO_SHAPE = re.compile(
    " ("
    + "|".join(sorted({f"{kw[0]}[a-z]{{{len(kw) - 2}}}{kw[-1]}" for kw in _TYPO_KEYWORDS}))
    + ")(?= )"
)
"""A word of a keyword's first letter, last letter and length (among the text's words joined by
spaces and framed by them, found in C): a word of another shape is no scramble. The pattern
starts with its space, which `re` finds with a byte search, where a leading `\\b` would make
it try every position."""

_ZERO_WIDTH = "\u200b\u2060\ufeff\u00ad\u180e\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069"
_SPECIAL = re.compile(
    r"\\u(?P<hi>[dD][89abAB][0-9a-fA-F]{2})\\u(?P<lo>[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|\\u(?P<u>[0-9a-fA-F]{4})"
    r"|&#[xX](?P<hex>[0-9a-fA-F]{1,6});?"
    r"|&#(?P<dec>[0-9]{1,7});?"
    r"|&(?P<name>[A-Za-z][A-Za-z0-9]{1,31};)"
    rf"|(?P<invisible>[{_ZERO_WIDTH}]+)"
    r"|(?P<joiner>[\u200c\u200d]+)"
    r"|(?P<tags>[\U000E0000-\U000E007F]+)"
)


_NAMED_REFERENCE = re.compile(r"&[A-Za-z][A-Za-z0-9]{1,31};")
_INVISIBLE_START = re.compile(rf"[{_ZERO_WIDTH}\u200c\u200d\U000E0000-\U000E007F]")


def _may_hold_special(text: str) -> bool:
    """False only when `_SPECIAL` finds nothing: it finds `\\u` escapes and `&#`/`&name;`
    references (substring searches settle those, each after a search for its first character,
    which is several times faster: a URL's `&a=1` is none) and invisible characters, which are
    non-ASCII."""
    if ("\\" in text and "\\u" in text) or ("&" in text and "&#" in text):
        return True
    if "&" in text and _NAMED_REFERENCE.search(text) is not None:
        return True
    return not text.isascii() and _INVISIBLE_START.search(text) is not None


def _special_matches(text: str) -> Iterator[re.Match[str]]:
    """What `_SPECIAL.finditer` finds, trying the pattern only where a match can start (`\\u`,
    `&`, an invisible character): its alternation is tried at every position otherwise, about
    20 MB/s on a page with one escape."""
    starts: list[int] = []
    for needle in ("\\u", "&"):
        position = text.find(needle)
        while position >= 0:
            starts.append(position)
            position = text.find(needle, position + 1)
    if not text.isascii():
        starts += [match.start() for match in _INVISIBLE_START.finditer(text)]
    starts.sort()
    after = 0
    for start in starts:
        if start < after:
            continue
        match = _SPECIAL.match(text, start)
        if match is not None:
            yield match
            after = match.end()


_INVISIBLE_DECODED = _INVISIBLE_START
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+|\n\s*\n")
_LINE_OR_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+|\n")
_WHITESPACE = re.compile(r"\s+")
_MIN_HIDDEN_TAG_TEXT = 8


def _markers_present(rule: _Rule, text: str) -> bool:
    return not rule.markers or any(
        first in text and any(marker in text for marker in group)
        for first, group in rule.marker_groups
    )


def _applicable_rules(words: frozenset[str], text: str) -> Iterator[tuple[_Rule, re.Pattern[str]]]:
    """The phrase rules whose words and markers the text holds (`_Rule`)."""
    for number in _RULE_GATES.open(words):
        rule, pattern = _COMPILED_RULES[number]
        if _markers_present(rule, text):
            yield rule, pattern


@dataclass(frozen=True, slots=True)
class _View:
    """Decoded text plus the way back to offsets of the original text."""

    text: str
    view_starts: tuple[int, ...]
    original_starts: tuple[int, ...]
    original_ends: tuple[int, ...]
    literal: tuple[bool, ...]

    def inside_one_decoded_run(self, start: int, end: int) -> bool:
        """True when a view span stems from one decoded run, e.g. text hidden in tag characters."""
        if not self.view_starts:
            return False
        first = bisect_right(self.view_starts, start) - 1
        last = bisect_right(self.view_starts, max(end - 1, start)) - 1
        return first == last and not self.literal[first]

    def to_original(self, start: int, end: int) -> tuple[int, int]:
        if not self.view_starts:
            return start, end
        first = bisect_right(self.view_starts, start) - 1
        last = bisect_right(self.view_starts, max(end - 1, start)) - 1
        if self.literal[first]:
            original_start = self.original_starts[first] + start - self.view_starts[first]
        else:
            original_start = self.original_starts[first]
        if self.literal[last]:
            original_end = self.original_starts[last] + end - self.view_starts[last]
        else:
            original_end = self.original_ends[last]
        return original_start, original_end


@dataclass(frozen=True, slots=True)
class _Hit:
    rule_id: str
    category: str
    start: int
    end: int
    whole_sentence: bool


def _decode_reference(match: re.Match[str]) -> str | None:
    """The character(s) an escape or reference stands for; None when it stands for nothing valid."""
    try:
        if match.group("hi") is not None:
            high = int(match.group("hi"), 16)
            low = int(match.group("lo"), 16)
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        for group, base in (("u", 16), ("hex", 16), ("dec", 10)):
            value = match.group(group)
            if value is not None:
                code = int(value, base)
                if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                    return None
                return chr(code)
    except ValueError:
        return None
    name = match.group("name")
    return html5.get(name) if name is not None else None


def _joins_ascii(text: str, start: int, end: int) -> bool:
    """Joiners matter in emoji and some scripts; next to ASCII letters they only split keywords."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return (before.isascii() and before.isalnum()) or (after.isascii() and after.isalnum())


def _tag_text(run: str) -> str:
    return "".join(chr(ord(c) - 0xE0000) for c in run if 0xE0020 <= ord(c) <= 0xE007E)


def _build_view(text: str) -> tuple[_View, list[tuple[int, int]], list[_Hit]]:
    """The decoded view, the spans to drop silently and hits found while decoding."""
    if not _may_hold_special(text):
        return _View(text, (), (), (), ()), [], []
    pieces: list[str] = []
    view_starts: list[int] = []
    original_starts: list[int] = []
    original_ends: list[int] = []
    literal: list[bool] = []
    silent: list[tuple[int, int]] = []
    hits: list[_Hit] = []
    view_length = 0
    cursor = 0

    def add(piece: str, start: int, end: int, is_literal: bool) -> None:
        nonlocal view_length
        if not piece:
            return
        pieces.append(piece)
        view_starts.append(view_length)
        original_starts.append(start)
        original_ends.append(end)
        literal.append(is_literal)
        view_length += len(piece)

    for match in _special_matches(text):
        start, end = match.span()
        if start > cursor:
            add(text[cursor:start], cursor, start, True)
        cursor = end
        if match.group("joiner") is not None and not _joins_ascii(text, start, end):
            add(match.group(0), start, end, True)
            continue
        if match.group("invisible") is not None or match.group("joiner") is not None:
            silent.append((start, end))
            continue
        tags = match.group("tags")
        if tags is not None:
            silent.append((start, end))
            hidden = _tag_text(tags)
            if len(hidden.strip()) >= _MIN_HIDDEN_TAG_TEXT:
                hits.append(_Hit("hidden_tag_characters", "encoding_evasion", start, end, False))
            add(f" {hidden} ", start, end, False)
            continue
        decoded = _decode_reference(match)
        if decoded is None:
            add(match.group(0), start, end, True)
        else:
            add(_INVISIBLE_DECODED.sub("", decoded), start, end, False)
    if cursor < len(text):
        add(text[cursor:], cursor, len(text), True)
    view = _View(
        "".join(pieces),
        tuple(view_starts),
        tuple(original_starts),
        tuple(original_ends),
        tuple(literal),
    )
    return view, silent, hits


def _lowercase_same_length(text: str) -> str:
    """Lowercase without shifting offsets (a few characters grow when lowercased)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def _letter_runs(lowered: str) -> frozenset[str]:
    """The runs of letters a-z in the (lowercased) text. Every other character, non-ASCII ones
    included, becomes a space, and C splits the rest: several times faster than a regex."""
    return frozenset(letter_marks(lowered).decode("ascii").split())


def _unscrambled(lowered: str) -> tuple[str, frozenset[str], bytes, str]:
    """The text with keyword-shaped scrambles ("ignroe") read as the keyword, its words, its
    letter marks (`_anchored.letter_marks`) and its words joined (`_anchored.joined_runs`)."""
    letters = letter_marks(lowered)
    words = frozenset(letters.decode("ascii").split())
    runs = joined_runs(words)
    scrambles = {
        word: keyword
        for word in _TYPO_SHAPE.findall(runs)
        if (keyword := _TYPO_INDEX.get((word[0], word[-1], len(word), "".join(sorted(word[1:-1])))))
        and keyword != word
    }
    if not scrambles:
        return lowered, words, letters, runs
    pattern = re.compile(rf"(?<![a-z])(?:{'|'.join(scrambles)})(?![a-z])")
    normalized = pattern.sub(lambda match: scrambles[match.group(0)], lowered)
    keywords = frozenset(scrambles.values())
    return normalized, words | keywords, letter_marks(normalized), runs + joined_runs(keywords)


def _phrase_hits(normalized: str, words: frozenset[str], index: AnchorIndex) -> list[_Hit]:
    """Hits of the phrase rules and letter-spaced keywords in the lowercased, unscrambled view."""
    hits: list[_Hit] = []
    for rule, pattern in _applicable_rules(words, normalized):
        for match in anchored(pattern, normalized, index, rule.anchor_set, rule.lead):
            hits.append(_Hit(rule.rule_id, rule.category, *match.span(), rule.whole_sentence))
    if not any(
        _SPACED_OPENINGS[number].search(normalized) for number in _SPACED_LETTERS.open(words)
    ):
        return hits
    for match in _LETTER_SPACED.finditer(normalized):
        letters = "".join(c for c in match.group(0) if c.isalpha())
        if _SPACED_KEYWORDS.search(letters):
            hits.append(_Hit("letter_spaced_keyword", "evasion", *match.span(), False))
    return hits


def _reads_as_injection(decoded: str) -> bool:
    view, _, hits = _build_view(decoded)
    normalized, words, letters, runs = _unscrambled(_lowercase_same_length(view.text))
    index = AnchorIndex(normalized, words, letters, _WORD_FINDER, runs)
    return (
        bool(hits)
        or bool(_phrase_hits(normalized, words, index))
        or any(
            signal.strong and not is_shown(signal, view.text, normalized)
            for signal in find_signals(view.text, normalized, index)
        )
    )


def _readable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in text if c.isprintable() or c in "\n\t\r")
    return text if text and printable >= 0.9 * len(text) else None


def _decode_base64(candidate: str) -> bytes | None:
    body = candidate.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        if "-" in body or "_" in body:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _decode_hex(candidate: str) -> bytes | None:
    digits = candidate.replace("\\x", "")
    if len(digits) % 2:
        return None
    try:
        return bytes.fromhex(digits)
    except ValueError:
        return None


def _carrier_marks(text: str) -> bytes:
    """One byte per character of the text: `c` for a base64 character, a space for every other
    one (every non-ASCII character, a lone surrogate too, is a break)."""
    return text.encode("ascii", "replace").translate(_AS_CARRIER_CHARACTERS)


def _may_hold_base64_run(text: str) -> bool:
    """Whether the text has 16 base64 characters (`-` and `_` included) in a row, which every
    base64 or hex candidate needs; found in C, several times faster than the candidate pattern
    on text without one."""
    return _CARRIER_RUN in _carrier_marks(text)


def _carrier_runs(marks: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of every run of 16 or more base64 characters among the carrier marks, found
    by byte searches: the first run of 16 starts a run, since shorter ones came first."""
    start = marks.find(_CARRIER_RUN)
    while start >= 0:
        end = marks.find(b" ", start + _MIN_CARRIER_RUN)
        if end < 0:
            yield start, len(marks)
            return
        yield start, end
        start = marks.find(_CARRIER_RUN, end)


def _base64_candidates(view_text: str) -> Iterator[re.Match[str]]:
    """What `_BASE64_CANDIDATE.finditer` finds. A candidate is a whole run of 16 or more base64
    characters (its look-behind refuses a start inside a run), so the pattern is tried only
    where such a run begins (`_carrier_runs`): links with long paths no longer make the pattern
    try every position of a page."""
    for start, _ in _carrier_runs(_carrier_marks(view_text)):
        match = _BASE64_CANDIDATE.match(view_text, start)
        if match is not None:
            yield match


_HEX_RUN = b"h" * 16
_AS_HEX_CHARACTERS = bytes(
    0x68 if chr(byte) in "0123456789abcdefABCDEF" else 0x20 for byte in range(256)
)


def _carrier_candidates(view_text: str) -> Iterator[tuple[str, int, int, str]]:
    """(kind, start, end, digits) of every base64 or hex run, found in one pass. A run in one
    case only (a snake_case or CONSTANT_CASE identifier, a lowercase path) is not taken for
    base64: text in base64 mixes both (each group's first character is I–Z for an uppercase or
    punctuation byte, Y–Z or a–e for a lowercase one), and code holds such runs by the dozen;
    such a run without 16 hex digits in a row is passed over before the candidate pattern is
    tried on it (what `_base64_candidates` would match there could yield nothing)."""
    encoded = view_text.encode("ascii", "replace")
    hex_marks = b""
    for run_start, run_end in _carrier_runs(encoded.translate(_AS_CARRIER_CHARACTERS)):
        start = run_start + 2 if view_text.startswith(("0x", "0X"), run_start) else run_start
        if not hex_marks:
            hex_marks = encoded.translate(_AS_HEX_CHARACTERS)
        has_hex_run = hex_marks.find(_HEX_RUN, start, run_end) >= 0
        if not has_hex_run:
            run = view_text[start:run_end]
            if run.islower() or run.isupper():
                continue
        match = _BASE64_CANDIDATE.match(view_text, run_start)
        if match is None:
            continue
        token = view_text[start : match.end()]
        if has_hex_run and _HEX_DIGITS.fullmatch(token):
            yield "hex_carrier", start, match.end(), token
            continue
        if not (token.islower() or token.isupper()):
            yield "base64_carrier", match.start(), match.end(), match.group(0)
        if has_hex_run:
            for part in _HEX_PART.finditer(token):
                yield "hex_carrier", start + part.start(), start + part.end(), part.group(0)
    if "\\" in view_text and "\\x" in view_text:
        for match in _ESCAPED_HEX_CANDIDATE.finditer(view_text):
            yield "hex_carrier", match.start(), match.end(), match.group(0)


_TEXT_GROUP_LEADS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef")
"""The first character of a base64 group whose first byte is below 0x80 (ASCII)."""
_MIN_TEXT_GROUP_SHARE = 0.7


_WITHOUT_TEXT_GROUP_LEADS = str.maketrans("", "", "".join(_TEXT_GROUP_LEADS))


def _may_encode_text(digits: str) -> bool:
    """Whether a base64 run may encode mostly-ASCII text: then most 4-character groups start with
    A–Z or a–f. A path, an identifier or a key rarely does, and is not decoded at all."""
    leads = digits[0::4]
    text_leads = len(leads) - len(leads.translate(_WITHOUT_TEXT_GROUP_LEADS))
    return text_leads >= _MIN_TEXT_GROUP_SHARE * len(leads)


def _carrier_hits(view_text: str) -> list[_Hit]:
    """Base64 and hex runs whose decoded text reads as an injection; the carrier is the hit."""
    hits: list[_Hit] = []
    carriers = {"base64_carrier": 0, "hex_carrier": 0}
    characters = {"base64_carrier": 0, "hex_carrier": 0}
    for kind, start, end, digits in _carrier_candidates(view_text):
        if carriers[kind] >= MAX_DECODED_CARRIERS:
            continue
        if kind == "base64_carrier" and not _may_encode_text(digits):
            continue
        raw = _decode_base64(digits) if kind == "base64_carrier" else _decode_hex(digits)
        decoded = _readable(raw) if raw else None
        if decoded is None:
            continue
        carriers[kind] += 1
        characters[kind] += len(decoded)
        if characters[kind] > MAX_DECODED_CHARACTERS:
            carriers[kind] = MAX_DECODED_CARRIERS
            continue
        if _reads_as_injection(decoded):
            hits.append(_Hit(kind, "encoding_evasion", start, end, False))
    return hits


def _snippet(passage: str) -> str:
    view, _, _ = _build_view(passage)
    text = _WHITESPACE.sub(" ", view.text).strip()
    if len(text) <= MAX_SNIPPET_CHARACTERS:
        return text
    room = text[: MAX_SNIPPET_CHARACTERS - 1]
    cut = max(room.rfind(". "), room.rfind("! "), room.rfind("? "))
    if cut >= MAX_SNIPPET_CHARACTERS // 2:
        return room[: cut + 1]
    space = room.rfind(" ")
    return (room[:space] if space > 0 else room) + "…"


def _merge(spans: list[tuple[int, int, _Hit]]) -> list[tuple[int, int, list[_Hit]]]:
    merged: list[tuple[int, int, list[_Hit]]] = []
    for start, end, hit in sorted(spans, key=lambda span: (span[0], span[1])):
        if merged and start < merged[-1][1]:
            previous_start, previous_end, previous_hits = merged[-1]
            merged[-1] = (previous_start, max(previous_end, end), [*previous_hits, hit])
        else:
            merged.append((start, end, [hit]))
    return merged


def _rebuild(text: str, removals: list[tuple[int, int]], silent: list[tuple[int, int]]) -> str:
    edits = sorted(
        [(start, 0, end, REMOVAL_MARKER) for start, end in removals]
        + [(start, 1, end, "") for start, end in silent]
    )
    parts: list[str] = []
    cursor = 0
    for start, _, end, replacement in edits:
        if end <= cursor:
            continue
        if start > cursor:
            parts.append(text[cursor:start])
        if replacement or start >= cursor:
            parts.append(replacement)
        cursor = end
    parts.append(text[cursor:])
    return "".join(parts)


_OVERRIDE_CATEGORIES = frozenset({"override", "role_override"})
_MAX_NESTED_DOCUMENTS = 2
"""A field that is itself a document (a CSV file's content in a JSON answer) is judged by its
own fields, this many levels deep."""
_MAX_COLON_CONTINUATIONS = 3
"""Blocks a prose passage ending in ':' takes along: the task it introduces."""


@dataclass(frozen=True, slots=True)
class _Passage:
    start: int
    end: int
    hit: _Hit


@dataclass(slots=True)
class _Findings:
    """What one scan removed, across the fields of a document."""

    listed: list[Finding] = field(default_factory=list)
    count: int = 0

    def add(self, passages: Sequence[tuple[int, int, list[_Hit]]], text: str, where: str) -> None:
        for start, end, hits in passages:
            self.count += 1
            if len(self.listed) < MAX_LISTED_FINDINGS:
                self.listed.append(
                    Finding(
                        rule_id=hits[0].rule_id,
                        category=hits[0].category,
                        snippet=_snippet(text[start:end]),
                        location=where,
                        removed_characters=end - start,
                    )
                )


def _clause_start(view_text: str, position: int, floor: int, field: bool) -> int:
    """Where the sentence (a field: the line or sentence) holding `position` starts."""
    reach = max(floor, position - _CLAUSE_REACH)
    boundary = _LINE_OR_SENTENCE_END if field else _SENTENCE_END
    start = reach
    for match in boundary.finditer(view_text, reach, position):
        start = match.end()
    if start == reach and reach > floor:
        start = view_text.rfind("\n", floor, position) + 1 or floor
    return max(start, floor)


def _block_end(view_text: str, opens: str, after: int) -> int | None:
    closing = re.compile(rf"<\s*/\s*{re.escape(opens)}\s*>", re.IGNORECASE).search(view_text, after)
    return closing.end() if closing is not None else None


_LETTER_ESCAPES = re.compile(r"\\[nrt]")


def _without_escape_letters(text: str) -> str:
    """The text with `\\n`, `\\r`, `\\t` and `\\"` blanked, offsets kept: in a JSON or YAML
    document (or a page quoting one) `\\n\\nIgnore` must read as a line break before a word.
    Two passes (a pattern for the three letters, a replace for the quote), not one per escape:
    no two escapes overlap and a blank makes none, so every order blanks the same ones."""
    if "\\" not in text:
        return text
    return _LETTER_ESCAPES.sub("  ", text).replace('\\"', ' "')


class _Region:
    """One unit of judgment: a whole text (prose with its Markdown blocks, or a document) or a
    document's field. Everything is found once; a document asks `touches` which fields hold
    something, and prose or a field asks `passages`."""

    def __init__(self, text: str, tool_names: frozenset[str]) -> None:
        self.text = text
        self.view, self.silent, self.decoded_hits = _build_view(text)
        self.unescaped = _without_escape_letters(self.view.text)
        # blanking before lowercasing too leaves the second pass only `\\N`, `\\R` and `\\T`;
        # the result is the same as blanking the lowercased text once
        lowered = _without_escape_letters(_lowercase_same_length(self.unescaped))
        self.normalized, words, letters, runs = _unscrambled(lowered)
        index = AnchorIndex(self.normalized, words, letters, _WORD_FINDER, runs)
        self.phrase_hits = _phrase_hits(self.normalized, words, index)
        self.all_signals = find_signals(
            self.unescaped, self.normalized, index, tool_names, words=words
        )
        self.carrier_hits = _carrier_hits(self.view.text)

    @property
    def suspicious(self) -> bool:
        """Anything found, quoted signals included (a document quotes every field)."""
        return bool(self.decoded_hits or self.phrase_hits or self.all_signals or self.carrier_hits)

    def touches(self) -> Callable[[int, int], bool]:
        """Whether a span of the text holds a hit, a signal or a character to drop: the fields of
        a document that need judging (original-text offsets)."""
        spans = sorted(
            [(hit.start, hit.end) for hit in self.decoded_hits]
            + [
                self.view.to_original(start, end)
                for start, end in (
                    *((hit.start, hit.end) for hit in self.phrase_hits + self.carrier_hits),
                    *((signal.start, signal.end) for signal in self.all_signals),
                )
            ]
            + self.silent
        )
        starts: list[int] = []
        ends: list[int] = []
        for start, end in spans:
            if ends and start <= ends[-1]:
                ends[-1] = max(ends[-1], end)
            else:
                starts.append(start)
                ends.append(end)

        def touches(start: int, end: int) -> bool:
            index = bisect_right(ends, start)
            return index < len(starts) and starts[index] < end

        return touches

    @cached_property
    def signals(self) -> list[Signal]:
        """The signals said, not only shown."""
        return [s for s in self.all_signals if not is_shown(s, self.unescaped, self.normalized)]

    def passages(self, field: bool) -> list[tuple[int, int, list[_Hit]]]:
        """The passages to remove, merged, in original-text offsets."""
        layout = None
        if not field and (self.signals or any(h.whole_sentence for h in self.phrase_hits)):
            layout = layout_of(self.view.text)
        spans: list[tuple[int, int, _Hit]] = [(h.start, h.end, h) for h in self.decoded_hits]
        for hit in self.carrier_hits + [h for h in self.phrase_hits if not h.whole_sentence]:
            spans.append((*self.view.to_original(hit.start, hit.end), hit))
        for passage in self._passages_in_view(layout):
            hidden = self.view.inside_one_decoded_run(passage.hit.start, passage.hit.end)
            start, end = (
                (passage.hit.start, passage.hit.end) if hidden else (passage.start, passage.end)
            )
            spans.append((*self.view.to_original(start, end), passage.hit))
        return _merge(spans)

    def _passages_in_view(self, layout: ProseLayout | None) -> list[_Passage]:
        view_text, lowered = self.view.text, self.normalized
        found: list[_Passage] = []
        candidates = [
            (h, h.category not in _OVERRIDE_CATEGORIES, "")
            for h in self.phrase_hits
            if h.whole_sentence
        ] + [
            (_Hit(s.rule_id, s.category, s.start, s.end, True), True, s.opens_block)
            for s in self.signals
        ]
        strong = {(s.start, s.end) for s in self.signals if s.strong}
        said = {(s.start, s.end) for s in self.signals}
        for hit, _, opens in candidates:
            if layout is not None and layout.is_shown(hit.start):
                continue
            is_signal = (hit.start, hit.end) in said
            if not is_signal and shown_not_said(
                view_text, lowered, hit.start, hit.end, hit.category not in _OVERRIDE_CATEGORIES
            ):
                continue
            start, end = self._extent(hit, opens, layout)
            weak = is_signal and (hit.start, hit.end) not in strong
            if weak and not requests_action(lowered, hit.end, end):
                continue
            found.append(_Passage(start, end, hit))
        return found

    def _extent(self, hit: _Hit, opens: str, layout: ProseLayout | None) -> tuple[int, int]:
        view_text = self.view.text
        if opens:
            closed = _block_end(view_text, opens, hit.end)
            if closed is not None:
                return hit.start, closed
        if layout is None:
            return _clause_start(view_text, hit.start, 0, True), len(view_text)
        unit_start, unit_end = layout.unit_at(view_text, hit.start)
        start = _clause_start(view_text, hit.start, unit_start, False)
        end = max(unit_end, hit.end)
        for _ in range(_MAX_COLON_CONTINUATIONS):
            if not view_text[start:end].rstrip().endswith(":"):
                break
            following = layout.next_unit(view_text, end)
            if following is None:
                break
            end = following[1]
        return start, end


def _filter(
    text: str, depth: int, tool_names: frozenset[str], findings: _Findings, where: str
) -> str | None:
    """The filtered text (None when unchanged): a document field by field, in its own format
    (`_document_shapes`), only the fields where something was found; prose block by block
    (`_prose_layout`); a field (depth > 0) as one unit. A field that is itself a multi-line
    document is judged by its own fields, `_MAX_NESTED_DOCUMENTS` levels deep."""
    region = _Region(text, tool_names)
    if not region.suspicious:
        return _rebuild(text, [], region.silent) if region.silent else None
    if depth == 0 or (depth <= _MAX_NESTED_DOCUMENTS and "\n" in text.strip()):

        def judge(value: str, at: str) -> str | None:
            if not value.strip():
                return None
            return _filter(value, depth + 1, tool_names, findings, f"{where} {at}".strip())

        shaped = filter_fields(text, judge, region.touches())
        if shaped is not None:
            return None if shaped == text else shaped
    passages = region.passages(field=depth > 0)
    if not passages and not region.silent:
        return None
    findings.add(passages, text, where)
    return _rebuild(text, [(start, end) for start, end, _ in passages], region.silent)


def scan_text(text: str, context: FilterContext = NO_FILTER_CONTEXT) -> FilterResult:
    """Remove suspicious passages from one text; blank text comes back unchanged.

    The whole text is checked first (cheap gates, then the rules); text with no signal at all
    comes back as it is. Otherwise a JSON, YAML or CSV document is judged field by field and
    written again in its own format, and anything else as Markdown prose, block by block.
    """
    if not text.strip():
        return FilterResult(sanitized_text=text)
    findings = _Findings()
    filtered = _filter(text, 0, context.offered_tool_names, findings, "")
    return FilterResult(
        sanitized_text=text if filtered is None else filtered,
        findings=tuple(findings.listed),
        redacted_count=findings.count,
    )


class StructuralInjectionFilter:
    """The built-in filter: no service needed; runs in-process and never fails on odd input."""

    async def filter_batch(
        self, texts: Sequence[str], context: FilterContext = NO_FILTER_CONTEXT
    ) -> Sequence[FilterResult]:
        return [scan_text(text, context) for text in texts]
