"""The tool's settings are complete and valid (`policy.resolve.configuration_state`)."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ToolOfferBlockReason


class NotConfigured(OfferCheck):
    name = "NOT_CONFIGURED"
    reason = ToolOfferBlockReason.NOT_CONFIGURED
    place = 70
    scope = Scope.TOOL

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        state = question.tool.state
        return self.judged(
            state.is_configured,
            "Its settings are complete and valid." if state.is_configured else state.message,
            question.tool.settings_evidence,
        )


CHECK = NotConfigured()
