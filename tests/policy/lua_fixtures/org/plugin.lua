require("icon")
ID = "43065dbc-78d0-45b7-92be-f14c2926e2dc"
ICON_SVG = SVG
NAME = "Org config"; AUTHORS = {"IT"}; SUPPORT_CONTACT = "it@example.org"; SOURCE_URL = "https://example.org"
CATEGORIES = {"CORE"}; TARGET_GROUPS = {"EVERYONE"}; IS_MAINTAINED = true; DEPRECATION_MESSAGE = ""
TYPE = "CONFIGURATION"; VERSION = "1.0.0"; PRIORITY = 100
TEMPERATURE = 0.5
WHOLE_FLOAT = 2.0
GREETING = "Grüße aus Köln ✓"
CONFIG = {}
CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "00000000-0000-0000-0000-000000000001", ["InstanceName"] = "local", ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "OLLAMA", ["Hostname"] = "http://localhost:11434",
    ["Model"] = { ["Id"] = "llama3", ["DisplayName"] = "Llama 3" },
}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.EnableTools"] = true
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {
    "web_search",          -- each list entry remembers its own line
    "read_web_page",
}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["search_confluence.baseUrl"] = "https://wiki.example.org/",
    maxResults = 5,
}
table.insert(CONFIG["SETTINGS"]["DataTools.DisabledToolIds"], "semantic_search")
CONFIG["SETTINGS"]["DataTools.EnableTools"] = false

local function helper(name)
    return "tool:" .. name
end
HELPER = helper
