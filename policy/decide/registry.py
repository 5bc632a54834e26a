"""The registry: the tools of one configuration and every question about offering them.

`ToolRegistry` is the catalog (`policy.catalog.ToolCatalog`) with the offer checks over it
(`policy.decide.decider.OfferDecider`) and request planning (here): a request's candidates, the
checks' verdict on each (`request_decisions`, which `policy replay` asks too), then what each
tool that passed offers now; a tool whose resolution fails costs only itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from policy._log import logger
from policy.catalog import ToolFacts, flow_rule
from policy.configuration import ProviderConfig
from policy.decide.decider import OfferDecider
from policy.decide.provider import ProviderOfferFacts
from policy.decision import OfferDecision, RunnableTool, RunnableTools
from policy.definitions import (
    ToolDefinition,
    ToolFunction,
)
from policy.flow import NO_HOLDINGS, UNDECLARED, ChatHoldings, FlowConflict, FlowRule, flow_conflict
from policy.provider_facts import ProviderFacts
from policy.tools import RequestExtras, ResolutionContext
from policy.vocabulary import (
    Component,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ProviderKind,
    ToolActivation,
)

_log = logger(__name__)

_TOOL_POLICY_HEADER = "# Tool usage instructions:"
_TOOL_POLICY_INTRO = (
    "You can use several tools, each with its own purpose and its own usage policy. Choose the "
    "tool that fits the task, ask the user when you are unsure which one to use or whether to use "
    "one at all, and follow the policy of every tool you use. Here are the usage policies for "
    "each tool:"
)


class ToolRegistry(OfferDecider):
    """The tools of one configuration and every question about offering them: the catalog
    (`ToolCatalog`: which tools exist, their settings and selection rules), the offer checks in
    order (`OfferDecider`) and, here, what one request offers: its candidates (context tools and
    the expanded selection), the checks' verdict on each, then what each passing tool offers now
    (`resolve_function`, `resolve_instructions`), and the instructions for the system prompt.

    Built once per configuration change; explain, lint, diff, the web page, the MCP gateway,
    replay and the runtime's request preparation all ask it.
    """

    def _prepare(self) -> None:
        super()._prepare()
        self._candidates: dict[Component, tuple[ToolFacts, ...]] = {}

    def _candidates_for(self, component: Component) -> tuple[ToolFacts, ...]:
        cached = self._candidates.get(component)
        if cached is None:
            cached = tuple(f for f in self.ordered if f.available and component in f.visible_in)
            self._candidates[component] = cached
        return cached

    def _request_candidates(
        self, selected_ids: Iterable[str], component: Component
    ) -> list[ToolFacts]:
        """The tools one request asks the checks about: context tools and the expanded selection."""
        wanted = set(self.expand_selection(selected_ids))
        return [
            f
            for f in self._candidates_for(component)
            if f.definition.activation is ToolActivation.CONTEXT or f.definition.id in wanted
        ]

    def _candidate_decisions(
        self,
        candidates: Sequence[ToolFacts],
        provider: ProviderOfferFacts,
        component: Component,
        restriction: OutboundDataRestriction,
        holdings: ChatHoldings = NO_HOLDINGS,
    ) -> tuple[OfferDecision, ...]:
        """The decider's verdict on each candidate, in order: `request_decisions` and
        `runnable_tools` both ask here, so a replay re-decides exactly what a request decided."""
        return tuple(
            self.decision(f.definition.id, provider, component, restriction, holdings)
            for f in candidates
        )

    def request_decisions(
        self,
        selected_ids: Iterable[str],
        provider: ProviderConfig | None,
        component: Component,
        *,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        holdings: ChatHoldings = NO_HOLDINGS,
    ) -> tuple[OfferDecision, ...]:
        """The checks' verdict on every candidate of one request, before any tool is asked what
        it offers: what `runnable_tools` decides first, and what `policy replay` re-decides."""
        provider_facts = self.provider_facts(provider)
        candidates = self._request_candidates(selected_ids, component)
        return self._candidate_decisions(
            candidates, provider_facts, component, outbound_restriction, holdings
        )

    async def runnable_tools(
        self,
        selected_ids: Iterable[str],
        provider: ProviderConfig | None,
        component: Component,
        *,
        may_run_tools: bool = True,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        retrieval_mode: DataSourceRetrievalMode = DataSourceRetrievalMode.SEMANTIC_SEARCH,
        chat_id: str = "",
        extras: RequestExtras | None = None,
        holdings: ChatHoldings = NO_HOLDINGS,
    ) -> RunnableTools:
        """The tools one request offers: checks first, then each passing tool is asked what it
        offers; a failing resolution costs only that tool. `holdings`: what the chat holds,
        for the FLOW_RULE check."""
        provider_facts = self.provider_facts(provider)
        if not may_run_tools:
            return RunnableTools((), "", ())
        candidates = self._request_candidates(selected_ids, component)
        decisions = self._candidate_decisions(
            candidates, provider_facts, component, outbound_restriction, holdings
        )
        shared_extras: RequestExtras | None = None
        request_provider: ProviderFacts | None = None
        offered: list[RunnableTool] = []
        left_out: list[tuple[str, str]] = []
        for facts, decision in zip(candidates, decisions, strict=True):
            if not decision.offered:
                continue
            if facts.untailored:
                offered.append(RunnableTool(facts.definition, facts.tool))
                continue
            if shared_extras is None:
                shared_extras = (
                    self.request_extras.merged(extras) if extras else self.request_extras
                )
            if request_provider is None:
                request_provider = ProviderFacts(
                    provider_facts.summary.kind if provider_facts.summary else ProviderKind.NONE,
                    provider_facts.confidence,
                    self.is_trusted_provider(provider),
                )
            context = ResolutionContext(
                component=component,
                provider=request_provider,
                settings=facts.values,
                retrieval_mode=retrieval_mode,
                outbound_restriction=outbound_restriction,
                chat_id=chat_id,
                extras=shared_extras,
            )
            definition, why = await self._resolve(facts, context)
            if definition is None:
                left_out.append((facts.definition.id, why))
            else:
                offered.append(RunnableTool(definition, facts.tool))
        definitions = [t.definition for t in offered]
        return RunnableTools(
            tuple(offered), self.tool_instructions(definitions), decisions, tuple(left_out)
        )

    async def _resolve(
        self, facts: ToolFacts, context: ResolutionContext
    ) -> tuple[ToolDefinition | None, str]:
        registered = facts.definition
        tool_id = registered.id
        try:
            function = await facts.tool.resolve_function(context)
        except Exception:  # a broken resolution costs this tool only
            _log.exception("Tool '%s' failed to resolve its function; left out", tool_id)
            return None, "its function could not be resolved"
        if function is None:
            return None, "nothing to offer in this request"
        try:
            instructions = await facts.tool.resolve_instructions(context)
        except Exception:
            _log.exception("Tool '%s' failed to resolve its instructions; left out", tool_id)
            return None, "its instructions could not be resolved"
        offered_function = self._offered_function(registered.function, function, tool_id)
        if (
            offered_function is registered.function
            and instructions == registered.system_prompt_instructions
        ):
            return registered, ""
        return (
            registered.model_copy(
                update={
                    "function": offered_function,
                    "system_prompt_instructions": instructions,
                }
            ),
            "",
        )

    @staticmethod
    def _offered_function(
        registered: ToolFunction, tailored: ToolFunction, tool_id: str
    ) -> ToolFunction:
        if tailored is registered:
            return registered
        if not isinstance(tailored.parameters, Mapping):
            _log.warning(
                "Tool '%s' tailored parameters that are no JSON object; the registered function "
                "is offered",
                tool_id,
            )
            return registered
        if tailored.name != registered.name or tailored.strict != registered.strict:
            _log.warning(
                "Tool '%s' tried to change its function name or strict mode; both stay as "
                "registered",
                tool_id,
            )
        if tailored == registered:
            return registered
        return registered.model_copy(
            update={
                "description_for_llm": tailored.description_for_llm,
                "parameters": tailored.parameters,
            }
        )

    @staticmethod
    def tool_instructions(offered: Sequence[ToolDefinition]) -> str:
        """One section per offered tool with non-empty instructions, under one header."""
        sections: dict[str, None] = {}
        for definition in offered:
            text = definition.system_prompt_instructions.strip()
            if text:
                sections[f"## Tool `{definition.function.name}`\n{text}"] = None
        if not sections:
            return ""
        return f"{_TOOL_POLICY_HEADER}\n{_TOOL_POLICY_INTRO}\n\n" + "\n\n".join(sections)

    # --- the flow rule (issue 24) ------------------------------------------------------------

    @property
    def flow_rule(self) -> FlowRule:
        """`DataTools.FlowRule` in force (OFF when not set)."""
        return flow_rule(self.configuration)

    def flow_conflict(self, tool_id: str, holdings: ChatHoldings) -> FlowConflict | None:
        """Whether the tool is in conflict with what the chat holds while a flow rule is on
        (None: no conflict, or the rule is OFF). BLOCK refuses such a tool, APPROVE asks for
        each of its calls; an unknown tool counts as declaring nothing."""
        if self.flow_rule is FlowRule.OFF:
            return None
        facts = self.facts(tool_id)
        effects = facts.effects if facts is not None else UNDECLARED
        return flow_conflict(tool_id, effects, holdings)
