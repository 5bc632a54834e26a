-- Applies to the finance group only: every web search waits for the person to approve it
ID = "6d3f7e9a-8b42-4c5d-9eaf-9a8b7c6d5e43"
TYPE = "CONFIGURATION"
NAME = "Finance"
DESCRIPTION = "Applies to the finance group only: every web search waits for the person to approve it"
VERSION = "1.0.0"
AUTHORS = { "IT" }
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://git.example.org/ai-config"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 200
CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "web_search" }
