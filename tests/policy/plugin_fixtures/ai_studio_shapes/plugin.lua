-- Fixture: every construct AI Studio's configuration template offers, written out the way an
-- administrator fills it in. Shapes only; names and texts belong to this test suite.
require("icon")

ID = "c0ffee00-1d2e-4f3a-8b4c-5d6e7f809a1b"
ICON_SVG = SVG
NAME = "Fabrikam Labs - shapes of an AI Studio configuration"
DESCRIPTION = "Covers each section and setting family the AI Studio template knows"
VERSION = "2.3.4"
TYPE = "CONFIGURATION"
DEPLOYED_USING_CONFIG_SERVER = true
PRIORITY = 50
AUTHORS = { "Fabrikam platform team", "Fabrikam security office" }
SUPPORT_CONTACT = "platform@fabrikam.example"
SOURCE_URL = "mailto:platform@fabrikam.example?subject=AI%20configuration"
CATEGORIES = { "CORE", "BUSINESS" }
TARGET_GROUPS = { "OFFICE_WORKERS", "SCIENTISTS" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""

CONFIG = {}

-- Language models ---------------------------------------------------------------------------
CONFIG["LLM_PROVIDERS"] = {}

local models = CONFIG["LLM_PROVIDERS"]
models[#models + 1] = {
    ["Id"] = "AB12CD34-0001-4A00-8000-0000000000A1",
    ["InstanceName"] = "Fabrikam vLLM cluster",
    ["UsedLLMProvider"] = "self_hosted",
    ["Host"] = "vllm",
    ["Hostname"] = "https://vllm.fabrikam.example/",
    ["AdditionalJsonApiParameters"] = "\"temperature\": 0.2, \"max_tokens\": 2048",
    ["CapabilityOverrides"] = {
        ["VIDEO_INPUT"] = false,
        ["optional_reasoning"] = true,
        ["REASONING_BY_DEFAULT"] = true,
    },
    ["APIKey"] = "ENC:v1:W4iK51uTFQArtXfXBeqCX1dWxIjOSFnzfuCb0qBJrbkb1HmRnWAr6DOpcoH212wH",
    ["Model"] = { ["Id"] = "qwen2.5-72b-instruct", ["DisplayName"] = "Qwen 2.5 72B" },
}
models[#models + 1] = {
    ["Id"] = "ab12cd34-0002-4a00-8000-0000000000a2",
    ["InstanceName"] = "",
    ["UsedLLMProvider"] = "HUGGINGFACE",
    ["Host"] = "NONE",
    ["Hostname"] = "",
    ["HFInferenceProvider"] = "together_ai",
    ["AllowUserProvidedAPIKey"] = true,
    ["Model"] = { ["Id"] = "meta-llama/Llama-3.3-70B-Instruct", ["DisplayName"] = "" },
}

-- Speech and embeddings (AI Studio sections toolpolicy keeps but does not use) --------------
CONFIG["TRANSCRIPTION_PROVIDERS"] = {
    {
        ["Id"] = "ab12cd34-0003-4a00-8000-0000000000a3",
        ["Name"] = "Fabrikam whisper",
        ["UsedLLMProvider"] = "SELF_HOSTED",
        ["Host"] = "WHISPER_CPP",
        ["Hostname"] = "https://whisper.fabrikam.example",
        ["Model"] = { ["Id"] = "large-v3-turbo", ["DisplayName"] = "Whisper turbo" },
    },
}
CONFIG["EMBEDDING_PROVIDERS"] = {
    {
        ["Id"] = "ab12cd34-0004-4a00-8000-0000000000a4",
        ["Name"] = "Fabrikam embeddings",
        ["UsedLLMProvider"] = "SELF_HOSTED",
        ["Host"] = "LM_STUDIO",
        ["Hostname"] = "https://embed.fabrikam.example",
        ["Model"] = { ["Id"] = "bge-m3", ["DisplayName"] = "BGE M3" },
    },
}

-- ERI v1 data sources ----------------------------------------------------------------------
CONFIG["DATA_SOURCES"] = {}
CONFIG["DATA_SOURCES"][#CONFIG["DATA_SOURCES"] + 1] = {
    ["Id"] = "ab12cd34-0005-4a00-8000-0000000000b1",
    ["Name"] = "Lab notebook search",
    ["Type"] = "ERI_V1",
    ["Hostname"] = "  https://eri-notebooks.fabrikam.example/  ",
    ["Port"] = 8443,
    ["AuthMethod"] = "TOKEN",
    ["Token"] = "ENC:v1:bGYDmF0j2D21nFBKcbNZYCYLyBv9RiJQ6IL6L9fx4hxTbErug+/cogpPFdGlV0MN",
    ["SecurityPolicy"] = "SELF_HOSTED",
    ["SelectedRetrievalId"] = "notebooks-hybrid",
    ["MaxMatches"] = 12,
}
CONFIG["DATA_SOURCES"][#CONFIG["DATA_SOURCES"] + 1] = {
    ["Id"] = "ab12cd34-0006-4a00-8000-0000000000b2",
    ["Name"] = "Supplier contracts",
    ["Type"] = "ERI_V1",
    ["Hostname"] = "https://eri-contracts.fabrikam.example",
    ["Port"] = 443,
    ["AuthMethod"] = "USERNAME_PASSWORD",
    ["UsernamePasswordMode"] = "SHARED_USERNAME_AND_PASSWORD",
    ["Username"] = "svc-contracts-reader",
    ["Password"] = "ENC:v1:wqk1FW16clFINmNDoO0HTyXWQerPOXBbWNWwCdB4z89lq5hk9w9tbk+xr17VzcmI",
    ["SecurityPolicy"] = "ALLOW_ANY",
    ["SelectedRetrievalId"] = "contracts-bm25",
    ["MaxMatches"] = 5,
}
CONFIG["DATA_SOURCES"][#CONFIG["DATA_SOURCES"] + 1] = {
    ["Id"] = "ab12cd34-0007-4a00-8000-0000000000b3",
    ["Name"] = "Personal HR folder",
    ["Type"] = "ERI_V1",
    ["Hostname"] = "https://eri-hr.fabrikam.example",
    ["Port"] = 443,
    ["AuthMethod"] = "USERNAME_PASSWORD",
    ["UsernamePasswordMode"] = "OS_USERNAME_SHARED_PASSWORD",
    ["Password"] = "ENC:v1:wqk1FW16clFINmNDoO0HTyXWQerPOXBbWNWwCdB4z89lq5hk9w9tbk+xr17VzcmI",
    ["SecurityPolicy"] = "SELF_HOSTED",
    ["SelectedRetrievalId"] = "hr-semantic",
    ["MaxMatches"] = 3,
}

-- Settings -----------------------------------------------------------------------------------
CONFIG["SETTINGS"] = {}
local S = CONFIG["SETTINGS"]

-- Tool settings toolpolicy acts on
S["DataTools.MinimumProviderConfidenceByToolId"] = { ["web_search"] = "moderate", ["read_web_page"] = "HIGH" }
S["DataConfidence.ConfidenceScheme"] = "CUSTOM"
S["DataConfidence.ConfidenceScheme.AllowUserOverride"] = "true"
S["DataConfidence.CustomConfidenceScheme"] = {
    ["OPEN_AI"] = "LOW", ["ANTHROPIC"] = "MODERATE", ["MISTRAL"] = "HIGH", ["GOOGLE"] = "LOW",
    ["X"] = "UNTRUSTED", ["DEEP_SEEK"] = "VERY_LOW", ["ALIBABA_CLOUD"] = "VERY_LOW",
    ["PERPLEXITY"] = "LOW", ["OPEN_ROUTER"] = "LOW", ["HETZNER"] = "MEDIUM", ["FIREWORKS"] = "LOW",
    ["GROQ"] = "LOW", ["HUGGINGFACE"] = "LOW", ["SELF_HOSTED"] = "HIGH", ["HELMHOLTZ"] = "HIGH",
    ["GWDG"] = "HIGH",
}
S["DataConfidence.EnforceGlobalMinimumConfidence"] = true
S["DataConfidence.GlobalMinimumConfidence"] = "low"
S["DataConfidence.GlobalMinimumConfidence.AllowUserOverride"] = false
S["DataConfidence.ShowProviderConfidence"] = true
S["DataSourceSecuritySettings.TrustedProviderIds"] = { "AB12CD34-0001-4A00-8000-0000000000A1" }

-- Application behaviour
S["DataApp.UpdateInterval"] = "DISABLE_UPDATES"
S["DataApp.UpdateInstallation"] = "AUTOMATIC"
S["DataApp.StartPage"] = "ASSISTANTS"
S["DataApp.StartPage.AllowUserOverride"] = true
S["DataApp.ShowPromptInjectionAlert"] = true
S["DataApp.ShowIntroduction"] = true
S["DataApp.ShowQuickStartGuide"] = false
S["DataApp.ShowLastChangelog"] = false
S["DataApp.ShowVision"] = false
S["DataApp.AllowUserToAddProvider"] = false
S["DataApp.AllowUserToImportPlugins"] = true
S["DataApp.AllowUserToImportConfigurationPlugins"] = false
S["DataApp.AllowUserToSharePlugins"] = false
S["DataApp.ShowAdminSettings"] = false
S["DataApp.PreviewVisibility"] = "BETA"
S["DataApp.EnabledPreviewFeatures"] = { "PRE_RAG_2024", "PRE_WRITER_MODE_2024" }
S["DataApp.PreselectedProvider"] = "ab12cd34-0001-4a00-8000-0000000000a1"
S["DataApp.PreselectedProfile"] = "ab12cd34-0009-4a00-8000-0000000000d1"
S["DataApp.UseTranscriptionProvider"] = "ab12cd34-0003-4a00-8000-0000000000a3"
S["DataApp.HiddenAssistants"] = { "BIAS_DAY_ASSISTANT", "LOG_VIEWER_ASSISTANT" }
S["DataApp.ShortcutVoiceRecording"] = "CmdOrControl+Shift+D"
S["DataApp.HttpClientTimeoutSeconds"] = 900
S["DataApp.ExternalHttpCustomRootCertificatesEnabled"] = true
S["DataApp.ExternalHttpCustomRootCertificateBundlePath"] = "/etc/fabrikam/roots.pem"
S["DataApp.ExternalHttpCustomRootCertificateAllowedHosts"] = { "*.fabrikam.example" }

-- Chat defaults
S["DataChat.PreselectOptions"] = true
S["DataChat.PreselectedProvider"] = "ab12cd34-0001-4a00-8000-0000000000a1"
S["DataChat.PreselectedProfile"] = ""
S["DataChat.PreselectedChatTemplate"] = "ab12cd34-0008-4a00-8000-0000000000c1"
S["DataChat.PreselectedDataSourcesDisabled"] = false
S["DataChat.PreselectedDataSourcesAutomaticSelection"] = true
S["DataChat.PreselectedDataSourcesAutomaticValidation"] = false
S["DataChat.PreselectedDataSourceIds"] = { "ab12cd34-0005-4a00-8000-0000000000b1" }
S["DataChat.SendToChatDataSourceBehavior"] = "NO_DATA_SOURCES"
S["DataChat.PreselectedDataSourceIds.AllowUserOverride"] = true

-- Batch processing, visual briefing, agents, assistant audits
S["DataBatchProcessing.PreselectOptions"] = true
S["DataBatchProcessing.FilePatterns"] = "*.pdf;*.docx"
S["DataBatchProcessing.PromptSource"] = "POLICY"
S["DataBatchProcessing.PreselectedPolicyId"] = "ab12cd34-000a-4a00-8000-0000000000e1"
S["DataBatchProcessing.OutputMode"] = "TABLE_ONLY"
S["DataBatchProcessing.CsvSeparator"] = "CUSTOM"
S["DataBatchProcessing.CustomCsvSeparator"] = "|"
S["DataBatchProcessing.MinimumDelaySeconds"] = 30
S["DataBatchProcessing.MinimumProviderConfidence"] = "UNKNOWN"
S["DataBatchProcessing.OutputMode.AllowUserOverride"] = true
S["DataVisualBriefing.PreselectedProvider"] = "ab12cd34-0001-4a00-8000-0000000000a1"
S["DataVisualBriefing.PreselectedTargetLanguage"] = "OTHER"
S["DataVisualBriefing.PreselectedOtherLanguage"] = "Swiss German"
S["DataVisualBriefing.PreselectedAudienceProfile"] = "ENGINEERS"
S["DataVisualBriefing.ShowSourceReferences"] = false
S["DataVisualBriefing.OptimizeImages"] = true
S["DataVisualBriefing.MinimumProviderConfidence"] = "MEDIUM"
S["DataAgentDataSourceSelection.PreselectAgentOptions"] = true
S["DataAgentDataSourceSelection.PreselectedAgentProvider"] = "ab12cd34-0001-4a00-8000-0000000000a1"
S["DataAgentRetrievalContextValidation.EnableRetrievalContextValidation"] = true
S["DataAgentRetrievalContextValidation.NumParallelValidations"] = 4
S["DataAgentRetrievalContextValidation.NumParallelValidations.AllowUserOverride"] = true
S["DataAssistantPluginAudit.RequireAuditBeforeActivation"] = true
S["DataAssistantPluginAudit.MinimumLevel"] = "SAFE"
S["DataAssistantPluginAudit.EnterpriseApprovedPlugins"] = {
    "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
    {
        ["PluginHash"] = "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF",
        ["DisplayName"] = "Fabrikam glossary assistant",
        ["ApprovedBy"] = "Security office",
        ["ApprovedAtUtc"] = "2026-03-01T08:00:00Z",
        ["Activate"] = true,
        ["AllowUserOverride"] = false,
    },
}

-- Chat templates -----------------------------------------------------------------------------
CONFIG["CHAT_TEMPLATES"] = {}
CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"] + 1] = {
    ["Id"] = "ab12cd34-0008-4a00-8000-0000000000c1",
    ["Name"] = "Lab report reviewer",
    ["SystemPrompt"] = "You review laboratory reports for Fabrikam and point out gaps.",
    ["PredefinedUserPrompt"] = "Review the attached report.",
    ["AllowProfileUsage"] = false,
    ["ToolIds"] = { " read_web_page ", "web_search" },
    ["DataSourceOptions"] = {
        ["DisableDataSources"] = false,
        ["AutomaticDataSourceSelection"] = true,
        ["PreselectedDataSourceIds"] = { "ab12cd34-0005-4a00-8000-0000000000b1" },
    },
    ["FileAttachments"] = { "attachments/report-checklist.md", "C:\\Shared\\Templates\\lab.docx" },
    ["ExampleConversation"] = {
        { ["Role"] = "user", ["Content"] = "Here is my draft." },
        { ["Role"] = "AI", ["Content"] = "The method section lacks the sample size." },
    },
}
CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"] + 1] = {
    ["Id"] = "ab12cd34-000b-4a00-8000-0000000000c2",
    ["Name"] = "No tools, please",
    ["SystemPrompt"] = "",
    ["ToolIds"] = {},
}

-- Live content and other objects (kept, not used by toolpolicy) -----------------------------
CONFIG["INTRODUCTIONS"] = {
    {
        ["Id"] = "ab12cd34-000c-4a00-8000-0000000000f1",
        ["Title"] = "Welcome to Fabrikam's AI workspace",
        ["Version"] = "3",
        ["Index"] = 2,
        ["Markdown"] = [===[
            ## First steps
            Use the preconfigured models only.
            ]===],
    },
}
CONFIG["MANDATORY_INFOS"] = {
    {
        ["Id"] = "ab12cd34-000d-4a00-8000-0000000000f2",
        ["Title"] = "Acceptable use",
        ["Version"] = "2026-1",
        ["Markdown"] = [===[
            Outputs are reviewed by a person before they leave the lab.
            ]===],
        ["AcceptButtonText"] = "I agree",
        ["RejectButtonText"] = "I do not agree",
    },
}
CONFIG["DOCUMENT_ANALYSIS_POLICIES"] = {
    {
        ["Id"] = "ab12cd34-000a-4a00-8000-0000000000e1",
        ["PolicyName"] = "Safety data sheet check",
        ["PolicyDescription"] = "Finds missing hazard statements in safety data sheets.",
        ["AnalysisRules"] = [===[List each hazard statement and its section.]===],
        ["OutputRules"] = [===[A table with columns Section, Statement, Missing.]===],
        ["MinimumProviderConfidence"] = "HIGH",
        ["PreselectedProvider"] = "ab12cd34-0001-4a00-8000-0000000000a1",
        ["PreselectedProfile"] = "ab12cd34-0009-4a00-8000-0000000000d1",
        ["HidePolicyDefinition"] = true,
    },
}
CONFIG["PROFILES"] = {
    {
        ["Id"] = "ab12cd34-0009-4a00-8000-0000000000d1",
        ["Name"] = "Chemist",
        ["NeedToKnow"] = "I work in the analytical chemistry lab.",
        ["Actions"] = "Answer with units and cite the method.",
    },
}
