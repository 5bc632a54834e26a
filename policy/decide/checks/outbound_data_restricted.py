"""Where the tool sends data is allowed in this chat (a chat that read a mailbox is restricted)."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check, Evidence
from policy.vocabulary import ToolOfferBlockReason, is_outbound_data_allowed


class OutboundDataRestricted(OfferCheck):
    name = "OUTBOUND_DATA_RESTRICTED"
    reason = ToolOfferBlockReason.OUTBOUND_DATA_RESTRICTED
    place = 90
    scope = Scope.QUESTION

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        tool = question.tool.tool
        evidence = (Evidence("outbound data", tool.outbound_data.name, "tool"),)
        if is_outbound_data_allowed(
            question.restriction, tool.outbound_data, tool.enforces_outbound_data_restriction
        ):
            return self.passed("Where it sends data is allowed in this chat.", evidence)
        return self.failed(
            f"This chat read a mailbox ({question.restriction.name}), and the tool would send "
            "data further than allowed; a new chat can use it again.",
            evidence,
        )


CHECK = OutboundDataRestricted()
