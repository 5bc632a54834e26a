"""The installation knows the tool and its definition is meant for this part of the app
(`visible_in`). Guards AI Studio's NOT_AVAILABLE_HERE, as the availability check does."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ToolOfferBlockReason


class NotMeantHere(OfferCheck):
    name = "NOT_MEANT_HERE"
    reason = ToolOfferBlockReason.NOT_AVAILABLE_HERE
    place = 30
    scope = Scope.QUESTION

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        component = question.component.value
        if question.component in question.tool.visible_in:
            return self.passed(f"It is meant for {component}.", question.tool.visibility_evidence)
        return self.failed(f"It is not meant for {component}.", question.tool.visibility_evidence)

    def verdict_for_unknown(self, question: Question, refusal: str | None) -> Check:
        tool_id = question.tool_id
        if refusal is None:
            return self.failed(f"This installation does not know a tool '{tool_id}'.")
        return self.failed(
            f"The definition of '{tool_id}' is refused, so it is never offered: {refusal}."
        )


CHECK = NotMeantHere()
