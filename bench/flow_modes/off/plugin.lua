-- Mode OFF of bench/flow_eval.py: the flow rule stays at its default, OFF, as every plugin
-- written before flow rules leaves it. Nothing else changes, so this is today's behaviour.
ID = "ec1401c6-c0fa-4629-9214-d038b99032f0"
NAME = "AgentDojo bench - flow rule OFF"
DESCRIPTION = "No flow rule: tools are offered and run as without one."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "toolpolicy bench" }
SUPPORT_CONTACT = "mailto:bench@example.org"
SOURCE_URL = "https://example.org/toolpolicy/bench"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 100

CONFIG = {}
CONFIG["SETTINGS"] = {}
