-- Mode APPROVE of bench/flow_eval.py (issue 24): a tool in conflict stays offered and each of its calls waits for a person's approval.
-- Loaded after ../effects (what each AgentDojo tool does). A build whose `policy check` does not
-- know DataTools.FlowRule reports this mode as not available.
ID = "3cd65a1c-8ccf-4c8e-969f-7b0dd0c46400"
NAME = "AgentDojo bench - flow rule APPROVE"
DESCRIPTION = "Flow rule APPROVE over the AgentDojo tools' declared effects."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "toolpolicy bench" }
SUPPORT_CONTACT = "mailto:bench@example.org"
SOURCE_URL = "https://example.org/toolpolicy/bench"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 200

CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.FlowRule"] = "APPROVE"
