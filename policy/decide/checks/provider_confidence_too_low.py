"""The provider's confidence under the scheme in force meets the tool's effective minimum."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ConfidenceLevel, ToolOfferBlockReason


class ProviderConfidenceTooLow(OfferCheck):
    name = "PROVIDER_CONFIDENCE_TOO_LOW"
    reason = ToolOfferBlockReason.PROVIDER_CONFIDENCE_TOO_LOW
    place = 80
    scope = Scope.TOOL_AND_PROVIDER

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        minimum = question.tool.minimum
        confidence = question.provider.confidence
        level = minimum.level
        evidence = (*minimum.evidence, *question.setup.scheme.evidence)
        if level is ConfidenceLevel.NONE:
            return self.passed("The tool requires no particular provider confidence.", evidence)
        if confidence >= level:
            return self.passed(
                f"The provider's confidence {confidence.name} meets the minimum {level.name}.",
                evidence,
            )
        return self.failed(
            f"The provider's confidence {confidence.name} is below the minimum {level.name} "
            f"this tool requires ({minimum.source}).",
            evidence,
        )


CHECK = ProviderConfidenceTooLow()
