"""Which tool calls wait for a person's approval, and why: the one reading of the configuration.

`DataTools.RequireApprovalToolIds` (tool ids and globs, every plugin's entries added up) and an
MCP server's `RequireApproval` (globs on that server's tool names) name tools whose every call
needs approval, whatever else allows it. The rules are read once per configuration; asking about
a tool is a lookup after its first question.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from policy._dataclass import dataclass

if TYPE_CHECKING:
    from policy.configuration import PolicyConfiguration
    from policy.mcp import McpServerConfig

REQUIRE_APPROVAL_TOOL_IDS = "DataTools.RequireApprovalToolIds"
_GLOB_CHARACTERS = frozenset("*?[")


def is_tool_glob(entry: str) -> bool:
    """Whether an entry is a glob (matched with fnmatch) rather than one tool id, which
    `policy check` must find among the known tools."""
    return not _GLOB_CHARACTERS.isdisjoint(entry)


@dataclass(frozen=True, slots=True)
class _Rule:
    """One approval rule: the calls of the tools `glob` matches under `prefix` need approval,
    because of the entry at `where`."""

    glob: str
    prefix: str
    """The tool-id prefix the glob applies under ("" for a tool-id glob, `<server>__` for an MCP
    server's glob on its tool names)."""
    where: str
    written: str = ""
    """The entry as written when the rule reads a misspelled id as the tool it meant."""


@dataclass(slots=True)
class ApprovalRules:
    """The configured approval rules; `reason(tool_id)` says why a tool's calls need approval
    (None: they do not)."""

    rules: tuple[_Rule, ...] = ()
    _answers: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        configuration: PolicyConfiguration,
        servers: Iterable[McpServerConfig] = (),
        known: Collection[str] = (),
    ) -> ApprovalRules:
        """The rules of a configuration; `servers` are MCP servers an app adds in code.

        An id (not a glob) that names none of the `known` tools is read the strict way, as the
        known tool it most likely meant, until it is fixed (`policy check` calls it an error): a
        typo must not let that tool's calls run unapproved. So is an MCP server's plain name
        that none of the server's known (listed) tools has."""
        from policy.mcp import TOOL_ID_SEPARATOR
        from policy.suggest import HintBudget

        rules: list[_Rule] = []
        hints = HintBudget()
        setting = configuration.setting(REQUIRE_APPROVAL_TOOL_IDS)
        if setting is not None:
            value = setting.value
            globs = (value,) if isinstance(value, str) else tuple(value or ())
            lines: Mapping[str, object] = setting.entry_locations
            for glob in map(str, globs):
                at = lines.get(glob) or setting.origin.location
                where = f"{REQUIRE_APPROVAL_TOOL_IDS} ({at})"
                rules.append(_Rule(glob, "", where))
                if known and not is_tool_glob(glob) and glob not in known:
                    meant = hints.closest_name(glob, known)
                    if meant is not None:
                        rules.append(_Rule(meant, "", where, glob))
        for server in (*configuration.mcp_servers, *servers):
            at = server.origin.location if server.origin is not None else "the app's code"
            prefix = server.name + TOOL_ID_SEPARATOR
            where = f'RequireApproval of MCP server "{server.name}" ({at})'
            listed = [tool_id[len(prefix) :] for tool_id in known if tool_id.startswith(prefix)]
            for glob in server.require_approval:
                rules.append(_Rule(glob, prefix, where))
                if listed and not is_tool_glob(glob) and glob not in listed:
                    meant = hints.closest_name(glob, listed)
                    if meant is not None:
                        rules.append(_Rule(meant, prefix, where, glob))
        return cls(tuple(rules))

    def reason(self, tool_id: str) -> str | None:
        """Why every call of `tool_id` needs a person's approval, or None."""
        if tool_id in self._answers:
            return self._answers[tool_id]
        answer = None
        for rule in self.rules:
            if not tool_id.startswith(rule.prefix):
                continue
            if fnmatchcase(tool_id[len(rule.prefix) :], rule.glob):
                answer = f"{rule.where} names '{rule.written or rule.glob}'"
                if rule.written:
                    answer += f" (read as '{rule.glob}' until fixed)"
                break
        self._answers[tool_id] = answer
        return answer
