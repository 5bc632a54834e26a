"""The tool is not in conflict with what the chat holds, while `DataTools.FlowRule` is BLOCK.

Its place is right after the provider-confidence check (80) and before the outbound-data check
(90): like the confidence requirement it answers to what tool results brought into the chat, and
it is asked per question (the chat's holdings). Under APPROVE it passes, saying that each call
needs a person's approval; under OFF it passes without looking. The rule itself is
`policy.flow.flow_conflict`, which every call's check before it runs asks too.
"""

from __future__ import annotations

from policy.catalog import FLOW_RULE, flow_rule
from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check, Evidence
from policy.flow import FlowRule, flow_conflict
from policy.vocabulary import ToolOfferBlockReason


class FlowRuleCheck(OfferCheck):
    name = "FLOW_RULE"
    reason = ToolOfferBlockReason.FLOW_CONFLICT
    place = 85
    scope = Scope.QUESTION

    def verdict(self, question: Question) -> Check:
        assert question.tool is not None
        configuration = question.setup.configuration
        rule = flow_rule(configuration)
        setting = configuration.setting(FLOW_RULE)
        rule_evidence = Evidence(
            FLOW_RULE,
            rule.value,
            "organization" if setting is not None else "default",
            setting.origin if setting is not None else None,
        )
        if rule is FlowRule.OFF:
            return self.passed(
                "No flow rule is in force (DataTools.FlowRule is OFF).", (rule_evidence,)
            )
        effects = question.tool.effects
        evidence = (
            rule_evidence,
            Evidence(
                "effects",
                effects.described(),
                effects.origin.value,
                effects.where,
            ),
            *(
                Evidence("chat holds", holding.described(), "chat")
                for holding in question.holdings.holdings
            ),
        )
        conflict = flow_conflict(question.tool_id, effects, question.holdings)
        if conflict is None:
            return self.passed(
                "With what the chat holds, the tool does not complete untrusted content, private "
                "data and an outward effect.",
                evidence,
            )
        if rule is FlowRule.APPROVE:
            return self.passed(
                f"Offered, but each call needs a person's approval (DataTools.FlowRule APPROVE): "
                f"{conflict.message}",
                evidence,
            )
        return self.failed(f"{conflict.message} DataTools.FlowRule is BLOCK.", evidence)


CHECK = FlowRuleCheck()
