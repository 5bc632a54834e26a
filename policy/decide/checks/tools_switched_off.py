"""Tools are switched on: no organization plugin failed closed, DataTools.EnableTools is not false."""

from __future__ import annotations

from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check, Evidence
from policy.provenance import Origin, SourceLocation
from policy.vocabulary import ToolOfferBlockReason


class ToolsSwitchedOff(OfferCheck):
    name = "TOOLS_SWITCHED_OFF"
    reason = ToolOfferBlockReason.TOOLS_SWITCHED_OFF
    place = 10
    scope = Scope.CONFIGURATION
    needs_tool = False

    def verdict(self, question: Question) -> Check:
        setup = question.setup
        configuration = setup.configuration
        if configuration.fails_closed:
            broken = [
                b
                for b in configuration.broken_organization_plugins
                if not b.replaced_by_last_known_good
            ]
            evidence = tuple(
                Evidence(
                    "organization plugin",
                    b.message,
                    "did not load; no last known good copy",
                    Origin(
                        b.plugin_id or b.path,
                        b.plugin_name or b.path,
                        b.location or SourceLocation(b.path, 0),
                    ),
                )
                for b in broken
            )
            names = ", ".join(b.plugin_name or b.path for b in broken)
            return self.failed(
                f"An organization plugin did not load ({names}), so every tool stays off until "
                "it loads again.",
                evidence,
            )
        if not setup.tools_enabled:
            return self.failed(
                "Tools are switched off altogether (DataTools.EnableTools = false).",
                setup.tools_enabled_evidence,
            )
        return self.passed("Tools are switched on.", setup.tools_enabled_evidence)


CHECK = ToolsSwitchedOff()
