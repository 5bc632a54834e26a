"""The examples every `policy` command's `--help` ends with, one or two command lines each,
keyed by the command as typed. The one source of them: `policy.cli_options.examples` writes a
command's epilog from here, and `python -m policy.cli_examples` writes the same lines into the
site's page of the command, `docs/administrators/cli.md` (its part between the marks
`policy._page_parts` reads). tests/policy/test_cli_help.py checks that every command has an
entry, that no entry names a command that does not exist, parses every line against its command,
and that the page shows what is here.

`--help` reads this module, so it imports nothing.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "policy": (
        "policy check --org examples/organization",
        "policy explain --all --org examples/organization",
    ),
    "policy chat": (
        'policy chat --org examples/quickstart --tools-file examples/clock_tool.py --tool calculator \'call calculator {"expression": "6 * 7"}\' --approve',
        'policy chat --org examples/organization --provider "Example Corp vLLM" --base-url http://127.0.0.1:8000/v1 --decision-log decisions.jsonl',
    ),
    "policy check": (
        "policy check --org examples/organization",
        "policy check --org examples/organization --user-settings examples/user-settings.yaml --strict -f json",
    ),
    "policy completion": (
        'eval "$(policy completion bash)"',
        "policy completion fish | source",
    ),
    "policy diff": (
        "policy diff --org examples/organization/base --against-org examples/organization",
        "policy diff --org examples/organization --against-user-settings examples/user-settings.yaml --fail",
    ),
    "policy encrypt": ('printf %s "$TAVILY_API_KEY" | policy encrypt',),
    "policy explain": (
        "policy explain web_search --org examples/organization --provider-kind OPEN_AI --model gpt-4.1",
        "policy explain --all --org examples/organization --component CHAT --fail",
    ),
    "policy export": (
        "policy export web_search --mode default --org examples/organization --user-settings examples/user-settings.yaml",
        "policy export web_search read_web_page --mode locked --org examples/organization --minimum-confidence",
    ),
    "policy fetch": (
        "policy fetch --state-dir /var/lib/toolpolicy --config-server 3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9@https://config.intra.example.org/ai",
        "TOOLPOLICY_CONFIG_SERVERS=3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9@https://config.intra.example.org/ai policy fetch --state-dir /var/lib/toolpolicy",
    ),
    "policy log": ("policy log summary decisions.jsonl --since 24h",),
    "policy log summary": (
        "policy log summary decisions.jsonl --since 24h",
        "policy log summary decisions.jsonl decisions.jsonl.1 --by subject -f json",
    ),
    "policy mcp": (
        "policy mcp list --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy",
        'policy mcp serve --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy --provider "Example Corp vLLM"',
    ),
    "policy mcp list": (
        "policy mcp list --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy",
        "policy mcp list --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy -f json",
    ),
    "policy mcp pin": (
        "policy mcp pin --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy > pins.lua",
    ),
    "policy mcp serve": (
        'policy mcp serve --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy --provider "Example Corp vLLM"',
        'policy mcp serve --org examples/organization --org examples/mcp --state-dir /var/lib/toolpolicy --provider "Example Corp vLLM" --transport http --port 0 --token "$TOKEN"',
    ),
    "policy replay": (
        "policy replay decisions.jsonl decisions.jsonl.1 --org candidate/organization",
        "policy replay decisions.jsonl --org candidate/organization -f json --fail-on-change",
    ),
    "policy schema": (
        "policy schema > toolpolicy-config.schema.json",
        "policy schema --decision-log",
    ),
    "policy serve": (
        "policy serve --org examples/organization",
        "policy serve --org examples/organization --port 0 --tools-file examples/clock_tool.py",
    ),
    "policy settings": (
        "policy settings read_web_page --org examples/organization",
        "policy settings set web_search maxResults 12 --org examples/organization --user-settings ~/.config/toolpolicy/settings.yaml",
    ),
    "policy settings keys": ("policy settings keys --org examples/organization",),
    "policy settings set": (
        "policy settings set web_search maxResults 12 --org examples/organization --user-settings ~/.config/toolpolicy/settings.yaml",
    ),
    "policy settings show": (
        "policy settings show read_web_page --org examples/organization",
        "policy settings show web_search --org examples/organization --user-settings examples/user-settings.yaml -f json",
    ),
    "policy status": (
        "policy status --state-dir /var/lib/toolpolicy",
        "policy status --state-dir /var/lib/toolpolicy -f json",
    ),
    "policy template": ("policy template > plugin.lua",),
    "policy tools": (
        "policy tools --org examples/organization",
        "policy tools --org examples/organization --component CHAT -f json",
    ),
}
"""Command (`policy settings set`) → the command lines its `--help` shows, run from the
repository root (where `examples/` is)."""


PAGE = "docs/administrators/cli.md"
"""The site's page that shows every command's examples, from the repository root."""


def examples_part() -> str:
    """Every command's examples as the site shows them: a heading per command (its anchor is the
    command, `#policy-settings-set`), its lines in a shell block."""
    parts: list[str] = []
    for command, lines in EXAMPLES.items():
        parts += [f"### `{command}`", "", "```bash", *lines, "```", ""]
    return "\n".join(parts)


def main(arguments: list[str]) -> int:
    """`python -m policy.cli_examples [PAGE ...]`: write the examples into the page(s)."""
    from pathlib import Path

    from policy._page_parts import write_part

    return write_part(arguments, "policy.cli_examples", examples_part(), Path(PAGE))


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
