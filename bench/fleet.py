"""Benchmark: what a fleet costs a device and an instance. Prints figures; asserts nothing.

    .venv/bin/python bench/fleet.py [--quick]

1. ETag check round for 10 configurations against a loopback configuration server: requests per
   configuration when nothing changed, the share sent conditionally and the downloads the server
   made (target: 1 request each, all with If-None-Match, all answered 304, no download), and the
   round's median time next to the first (downloading) round in the same run.
2. Reload-to-first-request: from a changed plugin on disk to the first request that sees it
   (`PolicyWatcher.reload()` + reading `watcher.runtime`), median, next to a plain `load_policy`
   of the same kind of change in the same run (a changed plugin each time on both sides, so no
   side profits from a cache; the reload's overhead over loading is the ratio).
3. `Chat.open` + one tightening: PostgreSQL (a fresh loopback server, when its binaries are
   installed) median vs SQLite median in the same run, and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policy import load_policy
from policy.config_sources import ConfigurationReference
from policy.vocabulary import ConfidenceLevel
from runtime import Chat, PolicyWatcher, SqliteChatStore
from runtime.config_fetch import fetch_configurations
from tests.servers.config_server import ConfigServer, plugin_text, zip_of
from tests.servers.loopback import running_app


def _median_ms(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def etag_round(repeats: int) -> None:
    served = ConfigServer()
    ids = [str(uuid.uuid4()) for _ in range(10)]
    for configuration_id in ids:
        served.archives[configuration_id] = zip_of({"plugin.lua": plugin_text(configuration_id)})
    with running_app(served.app()) as running, tempfile.TemporaryDirectory() as state:
        references = [ConfigurationReference(i, running.url("/configs"), "bench") for i in ids]
        start = time.perf_counter()
        fetch_configurations(references, Path(state))
        first_ms = (time.perf_counter() - start) * 1000
        served.requests.clear()
        served.answers.clear()
        unchanged_ms = _median_ms(lambda: fetch_configurations(references, Path(state)), repeats)
        rounds = repeats
        per_configuration = len(served.requests) / (rounds * len(ids))
        conditional = sum(1 for _, tag in served.requests if tag) / len(served.requests)
        downloads = sum(1 for status in served.answers if status == 200)
        not_modified = sum(1 for status in served.answers if status == 304)
    print("1. ETag check, 10 configurations")
    print(f"   requests per configuration per unchanged round: {per_configuration:.2f} (target 1)")
    print(f"   share sent with If-None-Match: {conditional:.0%}")
    print(
        f"   answers in {rounds} unchanged rounds: {not_modified} x 304, "
        f"{downloads} downloads (target 0)"
    )
    print(f"   first round (download + validate) {first_ms:.1f} ms")
    print(f"   unchanged round median {unchanged_ms:.1f} ms ({unchanged_ms / first_ms:.2f}x first)")


def reload_latency(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        folder = Path(home) / "org"
        folder.mkdir()
        configuration_id = str(uuid.uuid4())
        plugin = folder / "plugin.lua"
        plugin.write_text(plugin_text(configuration_id), encoding="utf-8")
        watcher = PolicyWatcher(
            lambda: load_policy(org=[folder], use_entry_points=False), watch=[folder]
        )
        counter = iter(range(10**9))

        def change_and_reload() -> None:
            line = f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ "t{next(counter)}" }}'
            plugin.write_text(plugin_text(configuration_id, line), encoding="utf-8")
            result = asyncio.run(watcher.reload())
            assert result.swapped, result
            _ = watcher.runtime.policy.registry.tool_ids

        def change_and_load() -> None:  # the peer: the same change, loaded without a watcher
            line = f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ "t{next(counter)}" }}'
            plugin.write_text(plugin_text(configuration_id, line), encoding="utf-8")
            _ = load_policy(org=[folder], use_entry_points=False).registry.tool_ids

        reload_ms = _median_ms(change_and_reload, repeats)
        load_ms = _median_ms(change_and_load, repeats)
    print("2. Reload to first request (one plugin changed on disk)")
    print(
        f"   reload + first read median {reload_ms:.1f} ms; "
        f"load_policy of the same change alone {load_ms:.1f} ms"
    )
    print(f"   reload overhead over loading: {reload_ms / load_ms:.2f}x")


def _open_and_tighten(store: object) -> Callable[[], None]:
    def run() -> None:
        chat = Chat.open(f"chat-{uuid.uuid4()}", store)  # type: ignore[arg-type]
        chat.require_provider_confidence(ConfidenceLevel.MODERATE)

    return run


def chat_stores(repeats: int) -> None:
    from tests.servers.postgres import running_postgres, server_binaries

    print("3. Chat.open + tighten")
    with tempfile.TemporaryDirectory() as home:
        sqlite_ms = _median_ms(_open_and_tighten(SqliteChatStore(Path(home) / "chats.db")), repeats)
    print(f"   SQLite median {sqlite_ms:.2f} ms")
    if server_binaries() is None:
        print("   PostgreSQL: not installed here (apt-get install postgresql); not measured")
        return
    from runtime import PostgresChatStore

    with running_postgres() as dsn:
        store = PostgresChatStore(dsn)
        try:
            _open_and_tighten(store)()
            postgres_ms = _median_ms(_open_and_tighten(store), repeats)
        finally:
            store.close()
    print(f"   PostgreSQL median {postgres_ms:.2f} ms ({postgres_ms / sqlite_ms:.2f}x SQLite)")
    print(
        "   (the loopback test cluster runs with fsync=off, SQLite syncs every commit to disk:"
        " the ratio is the statement and round-trip cost, not durable-write cost)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="fleet benchmark")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    repeats = 5 if parser.parse_args().quick else 25
    etag_round(repeats)
    reload_latency(repeats)
    chat_stores(repeats)


if __name__ == "__main__":
    main()
