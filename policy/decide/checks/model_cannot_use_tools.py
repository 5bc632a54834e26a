"""The provider's model can call tools (capability overrides, then the model family table)."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check, Evidence
from policy.vocabulary import ToolOfferBlockReason


class ModelCannotUseTools(OfferCheck):
    name = "MODEL_CANNOT_USE_TOOLS"
    reason = ToolOfferBlockReason.MODEL_CANNOT_USE_TOOLS
    place = 20
    scope = Scope.PROVIDER
    needs_tool = False

    def verdict(self, question: Question) -> Check:
        facts = question.provider
        provider = facts.provider
        evidence: tuple[Evidence, ...] = ()
        if provider is not None:
            evidence = (
                Evidence("provider.model", provider.model, "provider settings", provider.origin),
                *(
                    Evidence(f"CapabilityOverrides.{k}", v, "provider settings", provider.origin)
                    for k, v in sorted(provider.capability_overrides.items())
                ),
            )
        available = facts.availability.is_available
        return self.judged(
            available,
            "The model can call tools." if available else facts.availability.message,
            evidence,
        )


CHECK = ModelCannotUseTools()
