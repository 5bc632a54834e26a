"""The organization has not switched the tool (or its collection) off: DataTools.DisabledToolIds,
or a rule of the tool's own (`Tool.switch_off_gate`, e.g. an MCP server's DeniedTools)."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check, Evidence
from policy.resolve import DISABLED_TOOL_IDS, SOURCE_LOCKED
from policy.vocabulary import ToolOfferBlockReason


class ToolSwitchedOff(OfferCheck):
    name = "TOOL_SWITCHED_OFF"
    reason = ToolOfferBlockReason.TOOL_SWITCHED_OFF
    place = 40
    scope = Scope.TOOL

    def verdict(self, question: Question) -> Check:
        facts = question.tool
        assert facts is not None
        switch_off = facts.switch_off
        if switch_off.disabled_by:
            setting = switch_off.disabled_setting
            evidence = tuple(
                Evidence(
                    DISABLED_TOOL_IDS,
                    ident,
                    SOURCE_LOCKED,
                    setting.origin if setting is not None else None,
                )
                for ident in switch_off.disabled_by
            )
            what = "its collection" if facts.collection_id != facts.definition.id else "it"
            typos = [i for i in switch_off.disabled_by if i in switch_off.misspelled]
            read_as = (
                f"; no tool has the id {', '.join(typos)}: read as {facts.definition.id} until "
                "it is fixed"
                if typos
                else ""
            )
            return self.failed(
                f"The organization switched {what} off ({', '.join(switch_off.disabled_by)} in "
                f"{DISABLED_TOOL_IDS}{read_as}).",
                evidence,
            )
        gate = facts.tool.switch_off_gate
        if gate is not None and not gate.passed:
            return self.failed(gate.detail, gate.evidence)
        return self.passed("The organization has not switched it off.")


CHECK = ToolSwitchedOff()
