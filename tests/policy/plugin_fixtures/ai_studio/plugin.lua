require("icon")

-- ======================================
-- Settings a company rolls out to every AI Studio installation
-- (written in the style of AI Studio's configuration plugin template)
-- ======================================

-- The ID of this plugin; generate your own GUID:
ID = "86eccaee-7c9f-430f-9cf1-40b754f36274"

-- The icon of this plugin:
ICON_SVG = SVG

-- The name of this plugin:
NAME = "Contoso - Configuration for AI Studio"

-- The description of this plugin:
DESCRIPTION = "This is the central configuration of AI Studio for all Contoso employees."

-- The version of this plugin:
VERSION = "1.4.2"

-- The type of this plugin:
TYPE = "CONFIGURATION"

-- The authors of this plugin:
AUTHORS = {"Contoso IT", "Platform Team"}

-- The support contact for this plugin:
SUPPORT_CONTACT = "it-support@contoso.example"

-- The source URL of this plugin:
SOURCE_URL = "https://git.contoso.example/ai/ai-studio-config"

-- The categories of this plugin:
CATEGORIES = { "CORE" }

-- The target groups of this plugin:
TARGET_GROUPS = { "EVERYONE" }

-- The flag whether this plugin is maintained:
IS_MAINTAINED = true

-- When the plugin is deprecated, this message will be shown to users:
DEPRECATION_MESSAGE = ""

-- Deployed by the configuration server:
DEPLOYED_USING_CONFIG_SERVER = true

CONFIG = {}
CONFIG["LLM_PROVIDERS"] = {}

-- An example of a configuration for a self-hosted ollama server:
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "392A79C2-9B67-4E1B-93DB-9505A978F01B",
    ["InstanceName"] = "Contoso Llama",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "OLLAMA",
    ["Hostname"] = "http://llm.contoso.internal:11434",
    ["AdditionalJsonApiParameters"] = "",
    ["Model"] = {
        ["Id"] = "llama3.1:70b",
        ["DisplayName"] = "Llama 3.1 70B",
    },
    ["CapabilityOverrides"] = {
        ["FUNCTION_CALLING"] = true,
        ["OPTIONAL_REASONING"] = false,
    },
}

-- A cloud provider with an encrypted API key:
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "9833f353-d28e-4687-b92b-a84cd06edbe4",
    ["InstanceName"] = "OpenAI (Contoso contract)",
    ["UsedLLMProvider"] = "open_ai",
    ["Host"] = "NONE",
    ["Hostname"] = "",
    ["Model"] = {
        ["Id"] = "gpt-4.1",
        ["DisplayName"] = "GPT-4.1",
    },
    ["APIKey"] = "ENC:v1:4sn6oezzjEESBidRb0ARRIA9Cp57zSf+2tZuGoc/gmJZ4NCrllIXritR7YkgP64M",
}

CONFIG["EMBEDDING_PROVIDERS"] = {}
CONFIG["EMBEDDING_PROVIDERS"][#CONFIG["EMBEDDING_PROVIDERS"]+1] = {
    ["Id"] = "e2d56b0d-b451-4d16-80f1-a4fec9438aec",
    ["Name"] = "Contoso embeddings",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "OLLAMA",
    ["Hostname"] = "http://llm.contoso.internal:11434",
    ["Model"] = { ["Id"] = "nomic-embed-text", ["DisplayName"] = "Nomic Embed" },
}

CONFIG["DATA_SOURCES"] = {}
CONFIG["DATA_SOURCES"][#CONFIG["DATA_SOURCES"]+1] = {
    ["Id"] = "d69b0a7e-7e69-4d5b-9b11-c5dd308388f5",
    ["Name"] = "Contoso handbook",
    ["Type"] = "ERI_V1",
    ["Hostname"] = "https://eri.contoso.internal/",
    ["Port"] = 443,
    ["AuthMethod"] = "TOKEN",
    ["Token"] = "ENC:v1:sYhEnXdfq1vmk1JFFWHyfTu4RhQqo1RSSd182OTDPG4Swhh8N7ZIxdHKFwyNCTD6",
    ["SecurityPolicy"] = "SELF_HOSTED",
    ["SelectedRetrievalId"] = "hybrid",
    ["MaxMatches"] = 10,
}

CONFIG["CHAT_TEMPLATES"] = {}

-- A template which says nothing about tools: the chat defaults apply.
CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"]+1] = {
    ["Id"] = "a985cb20-af99-48b9-a0c3-2a2ca8bbaa29",
    ["Name"] = "Customer e-mail",
    ["SystemPrompt"] = "You write friendly, short e-mails to Contoso customers.",
    ["PredefinedUserPrompt"] = "Draft a reply to: ",
    ["AllowProfileUsage"] = true,
    ["ExampleConversation"] = {
        { ["Role"] = "USER", ["Content"] = "Thank a customer for the order." },
        { ["Role"] = "AI", ["Content"] = "Dear customer, thank you for your order!" },
    },
}

-- A template which rules out every tool:
CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"]+1] = {
    ["Id"] = "0cc00e49-a055-4fc0-820e-9a24b0f81aaa",
    ["Name"] = "Confidential notes",
    ["SystemPrompt"] = "Summarize the notes the user pastes.",
    ["ToolIds"] = {},
}

-- A template which brings its own tools:
CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"]+1] = {
    ["Id"] = "509a018a-a87f-4d40-9295-fc6c2020d19e",
    ["Name"] = "Research",
    ["SystemPrompt"] = "Research the question on the web and cite your sources.",
    ["ToolIds"] = { "web_search", " read_web_page ", "web_search" },
    ["DataSourceOptions"] = {
        ["DisableDataSources"] = false,
        ["AutomaticDataSourceSelection"] = true,
        ["AutomaticValidation"] = false,
        ["PreselectedDataSourceIds"] = { "d69b0a7e-7e69-4d5b-9b11-c5dd308388f5" },
    },
}

CONFIG["PROFILES"] = {}
CONFIG["PROFILES"][#CONFIG["PROFILES"]+1] = {
    ["Id"] = "e2e8090c-ba5d-4656-b92b-e3041d49843f",
    ["Name"] = "Contoso employee",
    ["NeedToKnow"] = "I work at Contoso, a furniture company.",
    ["Actions"] = "Answer in German unless asked otherwise.",
}

CONFIG["DOCUMENT_ANALYSIS_POLICIES"] = {}
CONFIG["DOCUMENT_ANALYSIS_POLICIES"][#CONFIG["DOCUMENT_ANALYSIS_POLICIES"]+1] = {
    ["Id"] = "82a97e62-72d4-4606-9a75-545366de7b85",
    ["PolicyName"] = "Contract check",
    ["PolicyDescription"] = "Checks supplier contracts.",
    ["AnalysisRules"] = "Find payment terms.",
    ["OutputRules"] = "A short table.",
    ["MinimumProviderConfidence"] = "HIGH",
}

CONFIG["INTRODUCTIONS"] = {}
CONFIG["INTRODUCTIONS"][#CONFIG["INTRODUCTIONS"]+1] = {
    ["Id"] = "e1f9e578-cef6-47c9-8423-f1bbdaa32e38",
    ["Title"] = "Welcome",
    ["Version"] = "1",
    ["Markdown"] = [[
        # Welcome to AI Studio at Contoso
    ]],
    ["Index"] = 1,
}

CONFIG["SETTINGS"] = {}

-- Configure the update check interval:
-- Allowed values are: NO_CHECK, DISABLE_UPDATES, ONCE_STARTUP, HOURLY, DAILY, WEEKLY
CONFIG["SETTINGS"]["DataApp.UpdateInterval"] = "NO_CHECK"

-- Configure how updates are installed:
CONFIG["SETTINGS"]["DataApp.UpdateInstallation"] = "MANUAL"

-- Allow users to add their own providers?
CONFIG["SETTINGS"]["DataApp.AllowUserToAddProvider"] = false

-- Preview features every user gets:
CONFIG["SETTINGS"]["DataApp.EnabledPreviewFeatures"] = { "PRE_RAG_2024", "PRE_READER_MODE_2024" }

-- Hide assistants nobody at Contoso needs:
CONFIG["SETTINGS"]["DataApp.HiddenAssistants"] = { "BIAS_DAY_ASSISTANT" }

-- Which provider is preselected:
CONFIG["SETTINGS"]["DataApp.PreselectedProvider"] = "392a79c2-9b67-4e1b-93db-9505a978f01b"

-- The confidence scheme:
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "trust_europe"
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme.AllowUserOverride"] = true
CONFIG["SETTINGS"]["DataConfidence.EnforceGlobalMinimumConfidence"] = "true"
CONFIG["SETTINGS"]["DataConfidence.GlobalMinimumConfidence"] = "LOW"
CONFIG["SETTINGS"]["DataConfidence.ShowProviderConfidence"] = true

-- Providers treated like self-hosted ones for data-source security:
CONFIG["SETTINGS"]["DataSourceSecuritySettings.TrustedProviderIds"] = { "9833F353-D28E-4687-B92B-A84CD06EDBE4" }

-- Chat defaults:
CONFIG["SETTINGS"]["DataChat.PreselectOptions"] = true
CONFIG["SETTINGS"]["DataChat.PreselectedProvider"] = "392a79c2-9b67-4e1b-93db-9505a978f01b"
CONFIG["SETTINGS"]["DataChat.PreselectedDataSourcesRetrievalMode"] = "SEMANTIC_SEARCH"

-- Agents:
CONFIG["SETTINGS"]["DataAgentRetrievalContextValidation.EnableRetrievalContextValidation"] = true
CONFIG["SETTINGS"]["DataAgentRetrievalContextValidation.NumParallelValidations"] = 3

-- Batch processing:
CONFIG["SETTINGS"]["DataBatchProcessing.MinimumDelaySeconds"] = 10
CONFIG["SETTINGS"]["DataBatchProcessing.CsvSeparator"] = "SEMICOLON"

-- Tools:
CONFIG["SETTINGS"]["DataTools.EnableTools"] = true
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {
    "search_confluence",
}
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {
    ["web_search"] = "VERY_LOW",
    ["read_web_page"] = "low",
    ["semantic_search"] = "NONE",
}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["web_search.searxng.baseUrl"] = "https://searx.contoso.example",
    ["web_search.backendStrategy"] = "FAILOVER",
}
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {
    ["web_search.defaultLanguage"] = "de-DE",
    ["read_web_page.freeAddressChoice"] = "OFF",
}
