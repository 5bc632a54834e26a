-- Example Corp: the organization-wide configuration every installation receives.
-- Deploy it as an organization plugin (policy --org examples/organization ...).
require("icon")

ID = "90649290-b330-44e2-9276-ffe5166210da"
ICON_SVG = SVG
NAME = "Example Corp - base configuration"
DESCRIPTION = "Providers, confidence rules and tool settings for everyone at Example Corp."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "Example Corp IT" }
SUPPORT_CONTACT = "mailto:ai-support@example.org"
SOURCE_URL = "https://git.example.org/it/ai-config"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""

-- Applied first; plugins with a higher PRIORITY are applied later and win per setting.
PRIORITY = 0

CONFIG = {}

CONFIG["LLM_PROVIDERS"] = {}

-- Our own inference server: HIGH confidence under every scheme.
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "79cb8e25-0940-4280-964a-0a57c61d6ee7",
    ["InstanceName"] = "Example Corp vLLM",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "VLLM",
    ["Hostname"] = "https://llm.example.org",
    ["Model"] = { ["Id"] = "Qwen/Qwen2.5-72B-Instruct", ["DisplayName"] = "Qwen 2.5 72B" },
    ["CapabilityOverrides"] = { ["FUNCTION_CALLING"] = true },
}

-- A cloud model; each user brings their own API key.
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "16e70c4d-b7aa-4c16-b770-2737343f1b32",
    ["InstanceName"] = "OpenAI GPT-4.1",
    ["UsedLLMProvider"] = "OPEN_AI",
    ["Host"] = "NONE",
    ["Hostname"] = "",
    ["Model"] = { ["Id"] = "gpt-4.1", ["DisplayName"] = "GPT-4.1" },
    ["AllowUserProvidedAPIKey"] = true,
}

CONFIG["SETTINGS"] = {}

-- Confidence: European providers are trusted more than others. Users may choose another scheme.
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "TRUST_EUROPE"
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme.AllowUserOverride"] = true

-- Tools are on for everyone; nobody can switch them off for themselves.
CONFIG["SETTINGS"]["DataTools.EnableTools"] = true

-- Confluence search is not rolled out yet.
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "search_confluence" }

-- The lowest provider confidence each tool may be offered to (locked).
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {
    ["web_search"] = "LOW",
    ["read_web_page"] = "LOW",
    ["semantic_search"] = "MEDIUM",
}

-- Settings users cannot change.
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["web_search.searxng.baseUrl"] = "https://search.example.org",
    ["web_search.backendStrategy"] = "FAILOVER",
    ["read_web_page.freeAddressChoice"] = "OFF",
}

-- Pre-filled settings; a value the user saves wins.
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {
    ["web_search.defaultLanguage"] = "all",
    ["web_search.defaultSafeSearch"] = "MODERATE",
    ["web_search.maxResults"] = "8",
}

-- Flow rule: once the chat holds both text from outside (a web page) and private data (the
-- wiki, a data source), a tool that could carry that data out or change something is not
-- offered, and each of its calls is refused (the defence against injected instructions that
-- does not depend on spotting them). BLOCK needs nothing of the apps; "APPROVE" asks a person.
CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"
