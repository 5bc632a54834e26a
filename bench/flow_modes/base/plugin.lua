-- The organization every mode of bench/flow_eval.py starts from: one self-hosted model (the
-- bench's scripted model on loopback; the harness puts its address in place of Hostname) and
-- tools on. AgentDojo's tools are app tools registered by the harness.
ID = "c60f8eff-f6f5-45ac-bc76-1569c37e12eb"
NAME = "AgentDojo bench - base"
DESCRIPTION = "The provider and tool settings every flow-rule mode of bench/flow_eval.py shares."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "toolpolicy bench" }
SUPPORT_CONTACT = "mailto:bench@example.org"
SOURCE_URL = "https://example.org/toolpolicy/bench"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 0

CONFIG = {}
CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "c72e1a5f-c82f-4e24-9a3e-2b0b1c5f9f22",
    ["InstanceName"] = "Gullible model",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "VLLM",
    ["Hostname"] = "http://127.0.0.1:9/v1",
    ["Model"] = { ["Id"] = "gullible-model", ["DisplayName"] = "Gullible model" },
    ["CapabilityOverrides"] = { ["FUNCTION_CALLING"] = true },
}

CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.EnableTools"] = true
-- Every AgentDojo result passes the built-in structural filter (the harness's tools declare
-- untrusted content), so "stopped by the filter" is the most the filter can do.
CONFIG["SETTINGS"]["DataTools.InjectionFilter"] = "STRUCTURAL"
