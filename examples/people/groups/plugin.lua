-- Which configurations apply to the members of which group (policy mcp serve and policy serve with sign-in)
ID = "4b1d5c7e-6f20-4a3b-9c8d-7e6f5a4b3c21"
TYPE = "CONFIGURATION"
NAME = "Groups"
DESCRIPTION = "Which configurations apply to the members of which group (policy mcp serve and policy serve with sign-in)"
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
CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {
    ["engineering"] = { "5c2e6d8f-7a31-4b4c-8d9e-8f7a6b5c4d32" },
    ["finance"] = { "6d3f7e9a-8b42-4c5d-9eaf-9a8b7c6d5e43" },
}
