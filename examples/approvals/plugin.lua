-- A local plugin for examples/approvals.py: every calculator call waits for a person's approval.
-- An organization writes the same key in its own plugin; the entries of every plugin add up.
ID = "5b7e9c1d-2f3a-4b5c-8d6e-7f8091a2b3c4"
TYPE = "CONFIGURATION"
NAME = "Approvals example"
DESCRIPTION = "The calculator asks before it runs."
VERSION = "1.0.0"
AUTHORS = { "IT" }
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://example.org/ai"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""

CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "calculator" }
