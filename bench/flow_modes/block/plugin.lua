-- Mode BLOCK of bench/flow_eval.py (issue 24): a tool in conflict is not offered, and every call is checked again before it runs.
-- Loaded after ../effects (what each AgentDojo tool does). A build whose `policy check` does not
-- know DataTools.FlowRule reports this mode as not available.
ID = "914140db-af0c-428d-95cb-06d70237237d"
NAME = "AgentDojo bench - flow rule BLOCK"
DESCRIPTION = "Flow rule BLOCK over the AgentDojo tools' declared effects."
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
CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"
