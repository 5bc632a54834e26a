"""Deciding whether a tool may be offered: one ordered list of checks over the catalog.

- `check` — what an offer check is (`OfferCheck`: its name, the reason it guards, its place,
  what its verdict depends on) and the `Question` it answers;
- `checks/` — the checks, one module each; `order.CHECKS` is them by place, written nowhere else;
- `provider` — what a decision knows about a provider (`ProviderOfferFacts`, trusted providers);
- `decider` — `OfferDecider`: the catalog plus every check asked in order, cached per question;
- `registry` — `ToolRegistry`: the decider plus request planning; what everything asks.

Adding a check: see docs/architecture.md, "Adding an offer check".
"""
