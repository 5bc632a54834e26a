-- Example Corp, Research department: applied after the base plugin (PRIORITY 100) and wins
-- where both set the same key. Tables replace, they do not merge: the department's
-- DisabledToolIds and MinimumProviderConfidenceByToolId are the whole tables from now on.
require("icon")

ID = "e9b2f063-d5d8-42f4-b51b-eb79784a6e6c"
ICON_SVG = SVG
NAME = "Example Corp - Research department"
DESCRIPTION = "Research works with internal wiki content: stricter confidence, Confluence on."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "Research IT" }
SUPPORT_CONTACT = "research-it@example.org"
SOURCE_URL = "https://git.example.org/research/ai-config"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "SCIENTISTS" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""

PRIORITY = 100

CONFIG = {}
CONFIG["SETTINGS"] = {}

-- Confluence is allowed here: the disabled list is now empty (it replaces the base list).
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {}

-- Stricter minimums; this table replaces the base table entirely.
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {
    ["web_search"] = "MEDIUM",
    ["read_web_page"] = "MEDIUM",
    ["search_confluence"] = "HIGH",
    ["semantic_search"] = "MEDIUM",
}

-- The department's wiki (locked) and its preferred language (a default the user may change).
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["web_search.searxng.baseUrl"] = "https://search.example.org",
    ["web_search.backendStrategy"] = "FAILOVER",
    ["read_web_page.freeAddressChoice"] = "OFF",
    ["search_confluence.baseUrl"] = "https://wiki.research.example.org/",
}
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {
    ["web_search.defaultLanguage"] = "en-US",
    ["web_search.defaultSafeSearch"] = "MODERATE",
    ["web_search.maxResults"] = "8",
}

-- Research chats let the model search their data sources (semantic_search); a user may switch
-- their own chats to searching with every message instead (an editable default).
CONFIG["SETTINGS"]["DataChat.PreselectedDataSourcesRetrievalMode"] = "SEMANTIC_SEARCH"
CONFIG["SETTINGS"]["DataChat.PreselectedDataSourcesRetrievalMode.AllowUserOverride"] = true
