"""Signals that a passage addresses the agent reading a tool result, not a human reader.

Indirect injections rarely say "ignore all previous instructions"; they dress a task up as coming
from the user or the system: an authority tag (`<INFORMATION>`, `[SYSTEM]`, `###(system_message)`),
a greeting to the model by name ("to you, GPT-4"), a preamble about the task the agent was given
("before you can solve the task…"), or a request to call one of the chat's own tools by name. A
human reader of an e-mail, a review or a README has no task, no tools and no model name, so these
phrases point at the agent. Each signal is:

- **strong**: it alone marks its passage (the phrases above, tool calls by an offered tool's name);
- **medium**: a marker that readers meet in ordinary text too (`TODO:`, `IMPORTANT!!!`, "new
  instructions:", "please do the following first"); it marks its passage only when an
  imperative request to act (send, visit, delete, book, say, …) is the clause it introduces, *and*
  that request spells out what only an agent with tools needs spelled out
  (`_AGENT_OBJECT`): an e-mail address, a web address, an account number, an exact value in
  single quotes, the mailbox owner as "the user" or "my inbox", everything of a kind ("all unread
  emails"), or words to say ("say that …"). A person's to-do list ("TODO: book the room, order
  lunch, send the agenda") asks colleagues who know the who and where; an injected task cannot
  rely on that, because the agent knows nothing but the text, so it names the target.

A signal does not count where the text only quotes or shows it: in inline code, inside double
quotes on its line, in a Markdown code block or block quote (the caller knows those), or as
reported speech ("attacks tell the model to ignore previous instructions"). That is what keeps
security articles, tokenizer vocabularies (`"<|im_start|>": 100264,`) and code samples intact,
at the price of missing an injection an attacker wraps in quotes or a code block.

All patterns run over the lowercased view of the text (or, for case-sensitive tags, the view
itself) and are gated by cheap substring checks, so text without any trigger costs a few scans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from runtime.web._anchored import AnchorIndex, Anchors, WordGates
from runtime.web._anchored import finditer as anchored

_AI_NAME = (
    r"(?:(?:the\s+)?(?:ai|a\.i\.)(?:\s+(?:language\s+)?(?:model|assistant|agent|system))?"
    r"|(?:the\s+)?(?:large\s+)?language\s+model|(?:the\s+)?(?:ai\s+)?assistant|(?:the\s+)?agent"
    r"|(?:the\s+)?chatbot|llms?|chatgpt|gpt[\s-]?[345](?:\.\d)?(?:o|[\s-]turbo)?|claude(?:\s+\d(?:\.\d)?)?"
    r"|gemini(?:\s+(?:pro|flash|\d(?:\.\d)?))*|llama(?:[\s-]?\d(?:\.\d)?)?|mistral|copilot|command[\s-]r\+?)"
)
"""How injections name the model they address (AgentDojo names it after the pipeline's model)."""
_AI_NAME_BOUNDED = _AI_NAME.replace(r"\s+", r"\s{1,8}").replace(")*|", "){0,2}|")
"""The same names, at most 8 blanks between their words: before a trigger, a rule's matches must
start within its `lead` characters (`_anchored`)."""


@dataclass(frozen=True, slots=True)
class Signal:
    """One match of an agent-addressing rule, as offsets into the view it was found in."""

    rule_id: str
    category: str
    strong: bool
    start: int
    end: int
    opens_block: str = ""
    """For an opening authority tag, its lowercased name: the passage runs to its closing tag."""
    reported_speech_counts: bool = True
    """False for an imperative phrase, which does not count when reported ("tell the model to …")."""


@dataclass(frozen=True, slots=True)
class _Rule:
    rule_id: str
    category: str
    strong: bool
    pattern: re.Pattern[str]
    triggers: Anchors | None
    """Substrings of the lowercased text one of which every match holds, within `lead`
    characters of its start: the pattern runs only near them (`_anchored`). None for a pattern
    that starts with a literal character, which `re` itself finds fast."""
    case_sensitive: bool = False
    reported_speech_counts: bool = True
    """False for imperative phrases, which quoted or reported ("tell the model to …") do not count."""
    lead: int = 0
    words: frozenset[str] = frozenset()
    """Whole words one of which every match holds (as a run of letters): when the text has none
    of them, the rule is skipped without a search."""
    opening: str = ""
    """The character every match starts with, for a rule without triggers: a text without it
    is skipped with one `in` (memchr)."""


def _rule(
    rule_id: str,
    category: str,
    strong: bool,
    pattern: str,
    triggers: tuple[str, ...],
    *,
    case_sensitive: bool = False,
    imperative: bool = False,
    lead: int = 0,
    words: str = "",
    opening: str = "",
) -> _Rule:
    return _Rule(
        rule_id,
        category,
        strong,
        re.compile(pattern, re.MULTILINE),
        # the case-sensitive rules match inside a run of letters ("USAIgnore", "External_TODO")
        Anchors.of(triggers, within_words=case_sensitive) if triggers else None,
        case_sensitive,
        not imperative,
        lead,
        words=frozenset(words.split()),
        opening=opening,
    )


_TAG_NAMES = (
    r"information|important(?:[_ ]instructions?|[_ ]message)?|instructions?|system(?:[_ ](?:message|"
    r"prompt|instructions?|note))?|admin(?:istrator)?(?:[_ ](?:message|instructions?|note))?|"
    r"developer(?:[_ ](?:message|instructions?))?|user[_ ]instructions?|urgent|note[_ ]to[_ ]ai"
)

_RULES: tuple[_Rule, ...] = (
    _rule(
        "authority_tag",
        "authority_markup",
        True,
        rf"<\s*/?\s*(?:{_TAG_NAMES.upper()})\s*>",
        (),
        case_sensitive=True,
        opening="<",
    ),
    _rule(
        "authority_tag",
        "authority_markup",
        True,
        r"<\s*/?\s*(?:information|important(?:[_ ]instructions?|[_ ]message)?|system[_ ](?:message|"
        r"prompt|instructions?)|admin[_ ](?:message|instructions?)|user[_ ]instructions?|"
        r"note[_ ]to[_ ]ai)\s*>",
        (),
        opening="<",
    ),
    _rule(
        "authority_tag",
        "authority_markup",
        False,
        r"<\s*(?:instructions?|system|admin|urgent)\s*>",
        (),
        opening="<",
    ),
    _rule(
        "pseudo_system_header",
        "authority_markup",
        True,
        r"\[\s*(?:SYSTEM(?:\s+(?:MESSAGE|PROMPT|NOTE|OVERRIDE|INSTRUCTIONS?))?|ADMIN(?:ISTRATOR)?"
        r"(?:\s+(?:MESSAGE|OVERRIDE|NOTE))?|IMPORTANT\s+(?:MESSAGE|INSTRUCTIONS?)|"
        r"INSTRUCTIONS?(?:\s+FOR\s+(?:THE\s+)?(?:AI|ASSISTANT|AGENT|MODEL))?)\s*\]",
        (),
        case_sensitive=True,
        opening="[",
    ),
    _rule(
        "pseudo_system_header",
        "authority_markup",
        True,
        r"#{1,6}\s{0,8}[(\[]\s{0,8}(?:system|admin|developer|assistant)"
        r"(?:[_ ](?:message|prompt|instructions?))?\s*[)\]]"
        r"|[(\[]\s{0,8}(?:system|admin|developer)[_ ](?:message|prompt|instructions?)\s*[)\]]",
        ("system", "admin", "developer", "assistant"),
        lead=23,
        words="system admin developer assistant",
    ),
    _rule(
        "pseudo_system_header",
        "authority_markup",
        False,
        r"^[ \t]{0,40}(?:system|admin|administrator|developer)(?:[ \t]+(?:message|note|notice|update))?"
        r"[ \t]*:(?=[ \t]*\S)",
        ("system", "admin", "administrator", "developer"),
        lead=40,
        words="system admin administrator developer",
    ),
    _rule(
        "addresses_model",
        "agent_address",
        True,
        rf"\bto\s{{1,8}}you\s*,\s*{_AI_NAME}\b",
        ("you",),
        lead=10,
        words="you",
    ),
    _rule(
        "addresses_model",
        "agent_address",
        True,
        rf"(?:^|(?<=[.!?:'\"]\s)|(?<=[\n'\"])){_AI_NAME_BOUNDED}\s{{0,8}},\s{{1,8}}"
        r"(?:please|you\s+(?:must|should|need\s+to|have\s+to|are\s+(?:required|instructed)))\b",
        # the model's name starts the match, at most 24 characters before one of these
        # ("the large language": the longest lead-in): rarer than "please" or "you"
        (
            *("ai", "a.i.", "language", "assistant", "agent", "chatbot", "llm", "llms"),
            *("chatgpt", "gpt", "claude", "gemini", "llama", "mistral", "copilot", "command"),
        ),
        lead=24,
        words="ai i llm llms language model assistant agent chatbot chatgpt gpt claude gemini llama "
        "mistral copilot command",
    ),
    _rule(
        "task_preamble",
        "agent_address",
        True,
        r"\bbefore\s+(?:you\s+(?:can\s+|could\s+|may\s+)?(?:solve|complete|do|finish|answer|continue"
        r"(?:\s+with)?|proceed\s+with|start|begin|work\s+on|respond\s+to|reply\s+to)|(?:solving|"
        r"completing|doing|finishing|answering|continuing\s+with|proceeding\s+with|responding\s+to))"
        r"\s+(?:the|your|this|my|any|the\s+original|the\s+user'?s?)\s+(?:\w+\s+)?(?:task|request|query|assignment)\b"
        r"|\bthe\s{1,8}task\s+(?:that\s+)?i\s+(?:gave|assigned|asked)\s+(?:to\s+)?you\b"
        r"|\bafter\s+you\s+(?:do|did|have\s+done|complete|finish)\s+(?:that|this|it)\s*,\s*you\s+"
        r"(?:can|may|should)\s+(?:solve|continue|complete|do|finish|proceed|return)"
        r"|\binstead\s+of\s+(?:the|your)\s+(?:original\s+|current\s+|user'?s\s+)?(?:task|request)\b",
        ("before", "task", "after", "instead"),
        imperative=True,
        lead=11,
        words="before task after instead",
    ),
    _rule(
        "override_previous",
        "override",
        True,
        r"(?<![a-z0-9])(?:ignore|disregard|forget|override|bypass|neglect)\s+(?:(?:all|any|every|the|of|your|my|"
        r"these|those)\s+){0,3}(?:previous|prior|above|earlier|preceding|former|original|initial|"
        r"existing|other)\s+[a-z]*(?:struct|prompt|direct|command|order|task|message|rule|guideline|"
        r"context|request)"
        r"|\b(?:strictly\s{1,8})?adhere\s+to\s+the\s+following\s+(?:instructions?|commands?|directives?)",
        ("ignore", "disregard", "forget", "override", "bypass", "neglect", "adhere"),
        lead=16,
        imperative=True,
        words="ignore disregard forget override bypass neglect adhere",
    ),
    _rule(
        "override_previous",
        "override",
        True,
        r"(?<![a-z])(?:Ignore|IGNORE|Disregard|DISREGARD|Forget|FORGET)\s+(?i:(?:(?:all|any|every|the|"
        r"your|my)\s+){0,3}(?:previous|prior|above|earlier)\s+[a-z]*(?:struct|prompt|task|rule))",
        ("ignore", "disregard", "forget"),
        case_sensitive=True,
        imperative=True,
    ),
    _rule(
        "todo_marker",
        "task_injection",
        False,
        r"(?<![a-z])TODO\s*:",
        ("todo",),
        case_sensitive=True,
    ),
    _rule(
        "todo_marker",
        "task_injection",
        False,
        r"(?<![\w-])todo\s*:",
        ("todo",),
        words="todo",
    ),
    _rule(
        "new_instructions",
        "task_injection",
        False,
        r"\b(?:new|updated|revised|additional|important|urgent)\s{1,8}(?:instructions?|tasks?|orders?|"
        r"directives?)\s*[:!]"
        r"|\bimportant\s*!{2,}|\burgent\s*!{2,}"
        r"|\b(?:please\s{1,8})?do\s{1,8}the\s{1,8}following\s+(?:first|now|immediately|instead)\s*:",
        tuple(
            [
                "instruction",
                "instructions",
                "task",
                "tasks",
                "order",
                "orders",
                "directive",
                "directives",
                "important",
                "urgent",
                "following",
                "!!",
            ]
        ),
        lead=35,
        words="instruction instructions task tasks order orders directive directives important urgent following",
    ),
    _rule(
        "follow_instructions",
        "task_injection",
        False,
        r"\b(?:follow|obey|execute|carry\s+out)\s+(?:only\s+)?(?:the|these)\s+(?:following|new|hidden)"
        r"\s+(?:instructions?|commands?|directives?|orders?)",
        ("follow", "obey", "execute", "carry"),
        imperative=True,
        words="follow obey execute carry",
    ),
)

_RULE_GATES = WordGates.of([(rule.words,) if rule.words else () for rule in _RULES])
SIGNAL_WORDS = [word for rule in _RULES if rule.triggers for word in rule.triggers.words]
"""The signals' word triggers (the filter finds them with its own rules' in one pass)."""

_ACTION = re.compile(
    r"(?:please\s+|kindly\s+|now\s*,?\s+|then\s*,?\s+|"
    r"first\s*,?\s+|immediately\s+|you\s+(?:should|must|need\s+to|have\s+to|will)\s+)?"
    r"(?:send|e-?mail|forward|post|upload|share|transfer|wire|pay|export|visit|open|fetch|browse|"
    r"download|click|go\s+to|navigate\s+to|delete|remove|erase|invite|change|reset|modify|update|"
    r"make|book|reserve|create|schedule|say|tell|reply|respond|get|find|concatenate|summari[sz]e|"
    r"grant|give|buy|order|purchase|run|execute|call|use|insert|include|append|write|print|output|"
    r"ignore|disregard|forget)\b"
)
"""A request to act, matched where the clause after a medium marker starts."""
_CLAUSE_GAP = re.compile(r"[\s.:;!?,)\]>*_~`'\"-]*")
"""What may stand between a marker and the clause it introduces."""

_TOOL_VERB = re.compile(r"\b(?:use|call|invoke|run|execute|trigger|using|calling)\b[^.\n]{0,60}$")
_TOOL_CONTEXT = re.compile(
    r"^[`'\"]?\s*(?:\(|tool\b|function\b|with\b[^.\n]{0,40}\b(?:arguments?|parameters?|args)\b)"
)

_REPORTED = re.compile(
    r"(?:\bto|\blike|\bas|\bsays?|\bsaid|\bsaying|\bsuch\s+as|\be\.g\.,?|\bi\.e\.,?|\breads?|"
    r"\bwhether|\bcan|\bcould|\bmight|\bwould|\bphrases?|\bnot)\s*$"
)

_INLINE_CODE = re.compile(r"`[^`\n]*`")
_DOUBLE_QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|“[^”\n]{0,200}”|«[^»\n]{0,200}»")
"""A quotation: a long double-quoted run is data (a string in a record), not a quoted phrase."""


def _quoted_spans(line: str) -> list[tuple[int, int]]:
    return [m.span() for m in _INLINE_CODE.finditer(line)] + [
        m.span() for m in _DOUBLE_QUOTED.finditer(line)
    ]


_COMMENT_PREFIX = re.compile(r"(?:#|//|/\*|\*|--|;|<!--|\bnote\b|\bfixme\b)[ \t]*$")


_COMMENT_PREFIX_REACH = 40
"""How far before a marker a comment opener is looked for (on its line)."""


def _in_code_comment(lowered: str, start: int) -> bool:
    """A `# TODO:` or `// IMPORTANT!!!` is a programmer's note in code, not a task for the agent."""
    line_start = lowered.rfind("\n", max(0, start - _COMMENT_PREFIX_REACH), start) + 1
    reach = max(line_start, start - _COMMENT_PREFIX_REACH)
    return _COMMENT_PREFIX.search(lowered, reach, start) is not None


def _line_bounds(text: str, position: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return start, len(text) if end < 0 else end


def shown_not_said(view: str, lowered: str, start: int, end: int, reported_counts: bool) -> bool:
    """Whether the match is quoted on its line (inline code, double quotes) or reported speech."""
    line_start, line_end = _line_bounds(view, start)
    if (
        "`" in view[line_start:line_end]
        or '"' in view[line_start:line_end]
        or any(q in view[line_start:line_end] for q in "“«")
    ):
        relative_start, relative_end = start - line_start, end - line_start
        for quote_start, quote_end in _quoted_spans(view[line_start:line_end]):
            if quote_start < relative_end and relative_start < quote_end:
                return True
    if reported_counts:
        return False
    return _REPORTED.search(lowered, max(0, start - 24), start) is not None


def find_signals(
    view: str,
    lowered: str,
    index: AnchorIndex,
    tool_names: frozenset[str] = frozenset(),
    *,
    words: frozenset[str] | None = None,
) -> list[Signal]:
    """Every agent-addressing signal in the text, those only shown too (`is_shown` tells them
    apart: a document, whose fields are all quoted, needs only to know where signals are).
    `words`, the text's runs of letters, lets rules whose words are absent be skipped."""
    signals: list[Signal] = []
    for number in _RULE_GATES.open(words):
        rule = _RULES[number]
        subject = view if rule.case_sensitive else lowered
        if rule.opening and rule.opening not in subject:
            continue
        for match in anchored(rule.pattern, subject, index, rule.triggers, rule.lead):
            start, end = match.span()
            if not rule.strong and _in_code_comment(lowered, start):
                continue
            opens = ""
            if rule.rule_id == "authority_tag" and not match.group(0).replace(" ", "").startswith(
                "</"
            ):
                opens = match.group(0).strip("<> \t").lower()
            signals.append(
                Signal(
                    rule.rule_id,
                    rule.category,
                    rule.strong,
                    start,
                    end,
                    opens,
                    rule.reported_speech_counts,
                )
            )
    if tool_names:
        signals.extend(_tool_call_signals(lowered, index, tool_names, words))
    return signals


@dataclass(frozen=True, slots=True)
class _ToolNames:
    pattern: re.Pattern[str]
    by_runs: tuple[tuple[str, frozenset[str]], ...]
    """Each name with its runs of letters: a text lacking one of them cannot hold the name."""
    by_longest_run: Mapping[str, tuple[int, ...]]
    """Where in `by_runs` the names are whose longest run is this word: a text is checked
    against the names of the words it holds, not against every offered name."""
    without_runs: tuple[int, ...]
    """The names with no run of letters (any text may hold them)."""
    longest_runs: frozenset[str]
    """The keys of `by_longest_run`: one intersection (in C, over the smaller set) finds those a
    text's words hold."""

    def present(self, words: frozenset[str] | None) -> tuple[str, ...]:
        """The names whose runs the text's words all hold, in `by_runs` order."""
        if words is None:
            return tuple(name for name, _ in self.by_runs)
        found = [*self.without_runs]
        for word in self.longest_runs & words:
            found.extend(self.by_longest_run[word])
        return tuple(self.by_runs[i][0] for i in sorted(found) if self.by_runs[i][1] <= words)


@lru_cache(maxsize=64)
def _tool_names(names: frozenset[str]) -> _ToolNames | None:
    usable = sorted((name.lower() for name in names if len(name) >= 3), key=len, reverse=True)
    if not usable:
        return None
    by_runs = tuple((name, frozenset(re.findall("[a-z]+", name))) for name in usable)
    by_longest_run: dict[str, list[int]] = {}
    for position, (_, runs) in enumerate(by_runs):
        if runs:
            by_longest_run.setdefault(max(runs, key=lambda r: (len(r), r)), []).append(position)
    return _ToolNames(
        re.compile(rf"(?<![\w.-])(?:{'|'.join(map(re.escape, usable))})(?![\w-])"),
        by_runs,
        {run: tuple(positions) for run, positions in by_longest_run.items()},
        tuple(position for position, (_, runs) in enumerate(by_runs) if not runs),
        frozenset(by_longest_run),
    )


_anchors_of = lru_cache(maxsize=256)(Anchors.of)
"""The anchors of the tool names a text may hold (the same few sets, text after text)."""


def _tool_call_signals(
    lowered: str, index: AnchorIndex, tool_names: frozenset[str], words: frozenset[str] | None
) -> list[Signal]:
    """A request to call one of the chat's own tools by name: the name, after a verb of calling,
    followed by an argument list or the words tool/function/arguments."""
    names = _tool_names(tool_names)
    if names is None:
        return []
    present = names.present(words)
    if not present:
        return []
    signals: list[Signal] = []
    for match in anchored(names.pattern, lowered, index, _anchors_of(present), 0):
        start, end = match.span()
        line_start = lowered.rfind("\n", max(0, start - 80), start) + 1
        before = _TOOL_VERB.search(lowered, max(line_start, start - 80), start)
        if before is None or _TOOL_CONTEXT.search(lowered[end : end + 80]) is None:
            continue
        signals.append(Signal("calls_offered_tool", "tool_call", True, before.start(), end))
    return signals


def is_shown(signal: Signal, view: str, lowered: str) -> bool:
    """Whether the signal is only quoted or reported (see the module doc); for a tool call, its
    verb ("use the tool `send_email` …" in quotes is an example, not a request)."""
    if signal.rule_id == "calls_offered_tool":
        return shown_not_said(view, lowered, signal.start, signal.start + 1, False)
    return shown_not_said(view, lowered, signal.start, signal.end, signal.reported_speech_counts)


_AGENT_OBJECT = re.compile(
    r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}"
    r"|https?://|\bwww\.[\w-]"
    r"|\b[a-z]{2}\d{2}[a-z0-9]{10,30}\b|\d{9,}"
    r"|(?<![\w'])'[^'\n]{1,80}'(?![\w'])"
    r"|\bthe\s+user'?s?\b|\buser'?s\b"
    r"|\bmy\s+(?:inbox|e-?mails?|mailbox|calendar|cloud(?:\s+drive)?|drive|files|account|password"
    r"|contacts|messages|passport|credit\s+card|bank(?:\s+account)?|iban)\b"
    r"|\ball\s+(?:(?:the|my|unread|received|sent|of\s+the)\s+){0,2}(?:e-?mails|messages|files|"
    r"contacts|conversations|documents|transactions|channels)\b"
    r"|\bsay\s+that\b|\btell\s+(?:me|the\s+user)\s+that\b"
)
"""What a request aimed at an agent spells out and a note to a colleague leaves to the reader
(see the module doc): a target address, account or exact value, the user's own data by that
name, all of a kind of item, or words to say. Every repetition is bounded and an address starts
where a run of its characters starts, so a long run costs one pass, not one per position."""


_OBJECT_REACH = 500
"""How far after its verb a task names its target (AgentDojo's goals: within about 200
characters). Bounded, so a text of many markers costs a pass per marker, not per passage."""


_TO_A_PERSON = re.compile(
    r"\b(?:by|before|until|no\s+later\s+than)\s+(?:(?:next|this|the)\s+)?(?:monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|noon|eod|cob|end\s+of\s+"
    r"(?:the\s+)?(?:day|week|month)|\d{1,2}(?::\d{2})?\s*(?:am|pm))\b"
    r"|\byour\s+(?!(?:\w+\s+)?(?:instructions?|prompts?|system|conversation|chat|context|memory"
    r"|history|rules|guidelines|tools?|task)\b)\w"
)
"""What marks a request as written to a person, not to an agent: a deadline ("by Monday", "by
end of day": an agent acts now, and injections say "first" or "immediately"), or the reader's
own things ("a copy of your ID": an agent has no ID; an injection names the user's data as "my
…" or "the user's"). The agent's own instructions, prompt or conversation ("your system
prompt") are not a person's things."""
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n")
_OVERRIDE_VERB = re.compile(r"\b(?:ignore|disregard|forget)$")
"""A request to ignore something is about the reader's instructions, whoever "your" is."""


def requests_action(lowered: str, start: int, end: int) -> bool:
    """Whether the clause right after a medium marker (at `start`) is a request to act
    (`_ACTION`) that names what an agent needs named (`_AGENT_OBJECT`) before the passage ends,
    in a sentence not written to a person (`_TO_A_PERSON`): the marker introduces the task
    ("TODO: send …"); a notice whose first clause is news ("IMPORTANT!!! The VPN moves.
    Visit …") is written to people."""
    gap = _CLAUSE_GAP.match(lowered, start, end)
    action = _ACTION.match(lowered, gap.end() if gap else start, end)
    if action is None:
        return False
    reach = min(end, action.start() + _OBJECT_REACH)
    if _AGENT_OBJECT.search(lowered, action.start(), reach) is None:
        return False
    if _OVERRIDE_VERB.search(action.group(0)):
        return True
    sentence = _SENTENCE_END.search(lowered, action.end(), reach)
    sentence_end = sentence.start() if sentence is not None else reach
    return _TO_A_PERSON.search(lowered, action.start(), sentence_end) is None
