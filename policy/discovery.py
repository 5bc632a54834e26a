"""Finding the tools the policy decides about.

Tool packages announce themselves as entry points in the group `toolpolicy.tools` (the built-in
ones from `runtime`, third-party ones from their own distributions). Nothing is imported until
`discover_tools` runs, so the CLI only pays for the tools when a command needs them. When an
announced built-in cannot be imported (a policy-only install, a broken runtime), the policy-side
definition of the same tool stands in: the decision about a tool never depends on whether its
executable half happens to import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import (
    EntryPoint,
    EntryPoints,
    PackageNotFoundError,
    distribution,
    distributions,
)
from operator import attrgetter

from policy._dataclass import dataclass
from policy.configuration import Finding, Severity
from policy.tools import Tool

ENTRY_POINT_GROUP = "toolpolicy.tools"
_SAME_DISTRIBUTION = attrgetter("_normalized_name")
"""What `importlib.metadata.entry_points` counts a distribution once by (the first one wins)."""
_DISTRIBUTION = "toolpolicy"


@dataclass(frozen=True, slots=True)
class _DiscoveredTools:
    """The tools found, in a stable order, and what went wrong on the way (as warnings)."""

    tools: tuple[Tool, ...]
    findings: tuple[Finding, ...] = ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(tool.definition.id for tool in self.tools)


def discover_tools(
    *,
    use_entry_points: bool = True,
    builtin_fallback: Callable[[], Iterable[Tool]] | None = None,
    executable: bool = True,
) -> _DiscoveredTools:
    """Every announced tool; policy-side built-ins stand in for any built-in that fails to load.

    `use_entry_points=False` skips the entry points and returns the policy-side built-ins only
    (fast, import-light; what a policy-only embedding gets). `executable=False` is for callers
    that only decide (the `policy` report commands): a built-in announced by toolpolicy itself
    is represented by its policy-side half without importing the runtime module — that half is
    the base class of the runtime tool, which adds only `execute`, so every decision is the same.
    Third-party entry points are loaded either way (their definitions live in their code).
    """
    fallback = {tool.definition.id: tool for tool in (builtin_fallback or _builtin_tools)()}
    if not use_entry_points:
        return _DiscoveredTools(tuple(fallback.values()))
    found: dict[str, Tool] = {}
    findings: list[Finding] = []
    ours: list[EntryPoints] = []
    for entry in sorted(_announced_entry_points(), key=lambda e: e.name):
        if not executable and entry.name in fallback and _announced_by_us(entry, ours):
            found.setdefault(entry.name, fallback[entry.name])
            continue
        tool, problem = _load_entry_point(entry)
        if tool is None:
            stand_in = fallback.get(entry.name)
            detail = (
                "; using the policy-side built-in definition instead"
                if stand_in is not None
                else "; the tool is left out"
            )
            findings.append(
                Finding(
                    Severity.WARNING,
                    "tool-entry-point-failed",
                    f"tool entry point '{entry.name}' ({entry.value}) could not be loaded: "
                    f"{problem}{detail}",
                )
            )
            continue
        tool_id = tool.definition.id
        if tool_id in found:
            findings.append(
                Finding(
                    Severity.WARNING,
                    "duplicate-tool-id",
                    f"tool entry point '{entry.name}' announces '{tool_id}' a second time; "
                    "the first one is kept",
                )
            )
            continue
        found[tool_id] = tool
    for tool_id, tool in fallback.items():
        found.setdefault(tool_id, tool)
    return _DiscoveredTools(tuple(found.values()), tuple(findings))


def _announced_entry_points() -> EntryPoints:
    """`entry_points(group=ENTRY_POINT_GROUP)`, without parsing every installed distribution's
    entry points: each distribution counts once, the first on the path by its normalized name
    (the standard library's own rule and key), and only one whose `entry_points.txt` names the
    group is parsed, since only it can announce a tool."""
    seen: set[str] = set()
    announced: list[EntryPoint] = []
    for found in distributions():
        name = _SAME_DISTRIBUTION(found)
        if name in seen:
            continue
        seen.add(name)
        if ENTRY_POINT_GROUP in (found.read_text("entry_points.txt") or ""):
            announced.extend(found.entry_points.select(group=ENTRY_POINT_GROUP))
    return EntryPoints(announced)


def _announced_by_us(entry: EntryPoint, ours: list[EntryPoints]) -> bool:
    """Whether toolpolicy's own distribution announces `entry` (the same name, target and
    group). Asked by comparing entry points, not distribution names: reading a distribution's
    name parses its whole metadata, which for toolpolicy holds the README. Another
    distribution announcing exactly our entry point names our module, so it would load the same
    tool. `ours` keeps toolpolicy's entry points once read (empty list: not read yet)."""
    if not ours:
        try:
            ours.append(distribution(_DISTRIBUTION).entry_points)
        except PackageNotFoundError:
            ours.append(EntryPoints(()))
    return entry in ours[0]


def _load_entry_point(entry: EntryPoint) -> tuple[Tool | None, str]:
    """The tool an entry point makes (a factory or a ready tool), or why it could not."""
    try:
        target = entry.load()
        is_factory = isinstance(target, type) or not isinstance(target, Tool)
        made = target() if callable(target) and is_factory else target
    except Exception as error:  # a third-party package must not take the CLI down
        return None, f"{type(error).__name__}: {error}"
    if not isinstance(made, Tool):
        return None, f"it produced a {type(made).__name__}, which is not a tool"
    return made, ""


def _builtin_tools() -> tuple[Tool, ...]:
    from policy.builtin import builtin_tools

    return tuple(builtin_tools())
