"""The tool's implementation is available in this installation (`Tool.is_available`)."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ToolOfferBlockReason


class NotAvailableHere(OfferCheck):
    name = "NOT_AVAILABLE_HERE"
    reason = ToolOfferBlockReason.NOT_AVAILABLE_HERE
    place = 50
    scope = Scope.TOOL

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        if question.tool.available:
            return self.passed("Its implementation is available.")
        return self.failed(
            "Its implementation is not available in this installation (e.g. a preview feature "
            "is off)."
        )


CHECK = NotAvailableHere()
