-- Example Corp's ticketing MCP server, governed like every other tool.
-- Use it together with the base configuration, from the project folder:
--   STATE=$(mktemp -d)   # the listing cache, outside the checkout
--   policy mcp list --org examples/organization --org examples/mcp --state-dir "$STATE"
ID = "4d0f5a8e-7c2b-4e61-9a53-2f8b1c6d7e90"
NAME = "Example Corp - ticketing MCP server"
DESCRIPTION = "The service desk's tickets, for chats on trusted providers, read-only."
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "Example Corp IT" }
SUPPORT_CONTACT = "mailto:ai-support@example.org"
SOURCE_URL = "https://git.example.org/it/ai-config"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 50

CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["MCP_SERVERS"] = {}
CONFIG["MCP_SERVERS"][#CONFIG["MCP_SERVERS"]+1] = {
    ["Id"] = "0b7e3c52-91d4-4f0a-8e26-5a1c9d3b7f48",
    ["Name"] = "tickets",
    ["Transport"] = "STDIO",
    ["Command"] = "python",
    ["Args"] = { "examples/mcp/tickets_server.py" },
    ["MinimumProviderConfidence"] = "MEDIUM",
    ["DeniedTools"] = { "delete_*" },
    -- Nothing is offered until an administrator reviewed the definitions and pinned them:
    -- paste the output of `policy mcp pin` here.
    ["RequirePins"] = true,
    ["Pins"] = {},
    -- The service desk is the organization's own system: its search brings private data and
    -- sends nothing out (its annotations leave openWorldHint out, which reads as all of that).
    ["Effects"] = { ["search_tickets"] = { "PRIVATE_DATA" } },
    ["SensitiveArguments"] = { "requester_email" },
    ["TimeoutSeconds"] = 20,
}
