"""The tool's definition is approved: a tool that brings its own verdict (`Tool.approval_gate`,
e.g. an MCP tool's pin) is asked; a definition shipped with the installation needs none."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ToolOfferBlockReason


class DefinitionNotApproved(OfferCheck):
    name = "DEFINITION_NOT_APPROVED"
    reason = ToolOfferBlockReason.DEFINITION_NOT_APPROVED
    place = 60
    scope = Scope.TOOL

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        gate = question.tool.tool.approval_gate
        if gate is None:
            return self.passed("Its definition ships with the installation; no pin applies.")
        return self.judged(gate.passed, gate.detail, gate.evidence)


CHECK = DefinitionNotApproved()
