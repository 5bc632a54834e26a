"""Benchmark: `policy mcp serve` with the organization's sign-in against the same gateway with the
shared `--token`, side by side in one run. Prints figures; asserts nothing.

    .venv/bin/python bench/gateway_identity.py [--quick]

Both gateways (subprocesses, as users run them) govern one ticket server (tests/servers/
mcp_server.py over streamable HTTP) and its trivial `add_comment` tool. The shared-token one
compares a fixed bearer token; the signed-in one checks each request's access token (signature
with the issuer's key kept after the first fetch, `iss`, `aud`, times, groups) and decides with
that person's policy and chat. The tokens are real: a local oidc-provider (tests/servers/oidc/)
issues one per person. Printed: one client calling again as soon as it has its answer (the
per-call cost), and 32 clients of 8 people at once (throughput): calls/s of each and the
signed-in gateway's time per call relative to the shared one's (target <= 1.1x), each the median
over rounds in which the two gateways alternate, so a change in the machine's load hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from collections.abc import Awaitable, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.mcp_gateway import Call, _announced, _http_server, _run  # noqa: E402  the same servers
from tests.mcp_tools.test_mcp import HEADER  # noqa: E402  the test organization: one provider
from tests.servers.oidc_provider import GATEWAY_AUDIENCE, oidc_provider  # noqa: E402

SERVER_ID = "6f1c0000-0000-4000-8000-000000000002"
ARGUMENTS = {"ticket_id": "1", "text": "x"}
SHARED_TOKEN = "bench-shared-token-0123456789"
ROUNDS = 10
PEOPLE = {f"person{n}": ("engineering",) for n in range(8)}


def _org(folder: Path, url: str, settings: str) -> Path:
    folder.mkdir()
    entry = f'["Transport"] = "STREAMABLE_HTTP", ["Url"] = {json.dumps(url)}'
    text = (
        HEADER
        + settings
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + f'CONFIG["MCP_SERVERS"][1] = {{ ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", {entry} }}\n'
    )
    (folder / "plugin.lua").write_text(text, encoding="utf-8")
    return folder


@contextmanager
def _gateway(org: Path, *extra: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "policy.cli", "mcp", "serve", "--org", str(org),
            "--provider", "OpenAI", "--transport", "http", "--port", "0", *extra]  # fmt: skip
    with _announced(argv, "serving MCP on ", 3) as url:
        yield url


async def _callers(stack: AsyncExitStack, url: str, tokens: list[str]) -> list[Call]:
    """One client session per token, each presenting it on every request."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    callers: list[Call] = []
    for token in tokens:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        await stack.enter_async_context(http)
        client = await stack.enter_async_context(
            Client(streamable_http_client(url, http_client=http))
        )
        await client.list_tools()

        def call(client: Any = client) -> Awaitable[Any]:
            return client.call_tool("tickets__add_comment", ARGUMENTS)

        callers.append(call)
    return callers


async def _sessions(stack: AsyncExitStack, url: str, tokens: list[str]) -> list[Call]:
    callers = await _callers(stack, url, tokens)
    await _run(callers, 3)  # warm: keys fetched, each person's policy and chat made
    return callers


async def main(quick: bool) -> None:
    total = 150 if quick else 600
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        state = base / "state.json"
        state.write_text(json.dumps({"base_tools": ["add_comment"]}), encoding="utf-8")
        with (
            oidc_provider(base / "idp", people=PEOPLE) as idp,
            _http_server(state) as upstream,
        ):
            sign_in = (
                f'CONFIG["SETTINGS"]["DataGateway.Issuer"] = "{idp.issuer}"\n'
                f'CONFIG["SETTINGS"]["DataGateway.Audience"] = "{GATEWAY_AUDIENCE}"\n'
            )
            shared_org = _org(base / "shared", upstream, "")
            signed_org = _org(base / "signed", upstream, sign_in)
            people = [idp.token(person) for person in PEOPLE]
            with (
                _gateway(shared_org, "--token", SHARED_TOKEN) as shared,
                _gateway(signed_org) as signed,
            ):
                print(
                    f"signed-in gateway vs shared-token gateway: {ROUNDS} rounds, the two "
                    "alternated in each; figures are medians over the rounds"
                )
                print("clients  people  shared c/s  signed c/s  signed/shared time per call")
                for clients, tokens in ((1, people[:1]), (32, [people[i % 8] for i in range(32)])):
                    async with AsyncExitStack() as stack:
                        shared_callers = await _sessions(
                            stack, shared, [SHARED_TOKEN] * len(tokens)
                        )
                        signed_callers = await _sessions(stack, signed, tokens)
                        each = max(2, total // ROUNDS // len(tokens))
                        rates: dict[str, list[float]] = {"shared": [], "signed": []}
                        for _ in range(ROUNDS):
                            rates["shared"].append((await _run(shared_callers, each))[0])
                            rates["signed"].append((await _run(signed_callers, each))[0])
                    ratios = [s / g for s, g in zip(rates["shared"], rates["signed"], strict=True)]
                    s_rate = statistics.median(rates["shared"])
                    g_rate = statistics.median(rates["signed"])
                    print(
                        f"{clients:>7} {len(set(tokens)):>7} {s_rate:>11.0f} {g_rate:>11.0f} "
                        f"{statistics.median(ratios):>10.2f}x (rounds: "
                        f"{min(ratios):.2f}-{max(ratios):.2f}; target <= 1.1x)",
                        flush=True,
                    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
