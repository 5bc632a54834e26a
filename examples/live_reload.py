"""Live reload: the app's policy follows its plugin folders (and a configuration server) without a
restart.

    python examples/live_reload.py                  # watches examples/organization
    python examples/live_reload.py --seconds 30     # edit examples/organization/*/plugin.lua meanwhile

Every change to a watched plugin is loaded; when it loads, the new runtime is swapped in (a request
in flight keeps the runtime it started with) and the revision change is printed. A change that does
not load keeps the policy in force. With TOOLPOLICY_CONFIG_SERVERS set (`ID@URL;…`, or AI Studio's
policy files or variables), each interval is also a fetch round from the configuration server into
./state; the sources are read anew before every round, so a configuration they stop naming is
withdrawn and a newly named one fetched.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from policy import load_policy
from policy.config_sources import configuration_references
from runtime import PolicyWatcher

HERE = Path(__file__).parent


async def main(seconds: float) -> None:
    organization = HERE / "organization"
    state = Path("state")
    watcher = PolicyWatcher(
        lambda: load_policy(org=[organization], state_dir=state),
        watch=[organization],
        references=configuration_references,  # read before every round
        state_dir=state,
        interval=16 * 60,
    )
    await watcher.fetch()  # one round before serving: the first request gets the server's copy
    await watcher.reload()
    print(
        f"policy in force: revision {watcher.revision}, tools {watcher.runtime.policy.registry.tool_ids}"
    )
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await asyncio.sleep(seconds)
    stop.set()
    await task
    print(f"policy in force: revision {watcher.revision}")
    for status in watcher.delivery:  # what an app's health page shows, per configuration
        print(
            f"configuration {status.id}: {status.state}"
            + (f" ({status.error})" if status.error else "")
        )
    if watcher.sources_error:  # the sources could not be read: nothing was withdrawn
        print(f"configuration sources: {watcher.sources_error}")
    if watcher.last_change is not None and watcher.last_change.error:
        print(f"last reload kept the policy in force: {watcher.last_change.error}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="how long to watch")
    asyncio.run(main(parser.parse_args().seconds))
