"""The offer checks, one per module; `policy.decide.order` finds and orders them."""
