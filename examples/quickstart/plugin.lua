-- The Quickstart's configuration: one provider, the dev provider on this machine
-- (python -m runtime.dev_provider: a scripted stand-in, not a model), tools on, and every
-- calculator call waits for a person's approval. Replace the provider entry with your real
-- model server when you have one.
ID = "3f0c2a6e-8b1d-4e57-9a2c-6d4b1e7f0a93"
TYPE = "CONFIGURATION"
NAME = "Quickstart"
DESCRIPTION = "A first chat against the local dev provider, with an approval."
VERSION = "1.0.0"
AUTHORS = { "IT" }
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://example.org/ai"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""

CONFIG = {}
CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f",
    ["InstanceName"] = "Dev provider (stand-in)",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "VLLM",
    ["Hostname"] = "http://127.0.0.1:8765",
    ["Model"] = { ["Id"] = "dev-provider", ["DisplayName"] = "Dev provider (not a model)" },
    ["CapabilityOverrides"] = { ["FUNCTION_CALLING"] = true },
}

CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.EnableTools"] = true
CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "calculator" }
