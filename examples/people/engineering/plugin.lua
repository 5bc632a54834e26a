-- Applies to the engineering group only: at most 200 web searches a day per person
ID = "5c2e6d8f-7a31-4b4c-8d9e-8f7a6b5c4d32"
TYPE = "CONFIGURATION"
NAME = "Engineering"
DESCRIPTION = "Applies to the engineering group only: at most 200 web searches a day per person"
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
CONFIG["SETTINGS"]["DataGateway.CallLimits"] = { ["web_search"] = "200/day" }
