"""Shell completion as a shell asks for it (`_POLICY_COMPLETE`): every command that takes
`--provider` completes the configured providers by name and id."""

from __future__ import annotations

import pytest

from tests.policy.test_cli import run

_PROVIDERS = [
    "plain,Example Corp vLLM",
    "plain,79cb8e25-0940-4280-964a-0a57c61d6ee7",
    "plain,OpenAI GPT-4.1",
    "plain,16e70c4d-b7aa-4c16-b770-2737343f1b32",
]


@pytest.mark.parametrize(
    "command", [["explain", "web_search"], ["chat"], ["mcp", "serve"]], ids=" ".join
)
def test_provider_completes_the_configured_providers(command: list[str]) -> None:
    words = ["policy", *command, "--org", "examples/organization", "--provider", ""]
    done = run(
        env={
            "_POLICY_COMPLETE": "bash_complete",
            "COMP_WORDS": " ".join(words),
            "COMP_CWORD": str(len(words) - 1),
        }
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == _PROVIDERS
