"""Live reload: keep an app's `ChatRuntime` in step with its configuration, without a restart.

A `PolicyWatcher` fetches the delivered configurations on an interval (16 minutes by default,
jittered so a fleet does not hit its server at the same second) and, with `watchfiles`, reacts to
changes in local plugin folders. When the configuration's content changes it loads the new policy,
builds a new `ChatRuntime` and swaps it in with one assignment: a request in flight keeps the
runtime it started with, the next request gets the new one. A change that does not load (a user
settings file that does not parse, an organization plugin that breaks with no last-known-good
copy) keeps the policy in force and is logged; nothing is half-applied. A replaced runtime is
closed (its MCP sessions and stdio servers stopped) `retire_after_seconds` after the swap, when the
requests that read it have had time to end; `aclose()` closes every runtime the watcher built.

Which configurations to fetch is either fixed (a sequence of references) or read anew before every
round (a callable, e.g. `configuration_references`): a configuration the sources stop naming is
withdrawn by that round, a newly named one is fetched. A reading that fails (the callable raises,
a policy file is ignored, nothing is named any more) withdraws nothing: every configuration in
force stays and keeps being fetched, and `sources_error` says why.

What went wrong is kept, not only logged: `delivery` is each configuration's status after the last
fetch round (the same records `policy status` shows), `last_change` the latest reload that found
changed files, with its error. A round or reload that fails unexpectedly is recorded there and the
watcher keeps going.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from policy._runtime_seam import UserSettingsError

if TYPE_CHECKING:
    from policy import ConfigurationReference, DeliveryStatus, Policy
    from policy._runtime_seam import ConfigurationReferences
    from runtime.session import ChatRuntime

_log = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 16 * 60.0
_DEFAULT_JITTER = 0.1
_DEFAULT_RETIRE_AFTER_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """What one reload did: `swapped` when a new runtime is in force, else `error` says why not.

    `old_revision` / `new_revision` are content digests of the configuration files (plugin
    folders and delivered copies); equal revisions mean nothing changed and nothing was loaded.
    """

    swapped: bool
    old_revision: str
    new_revision: str
    error: str | None = None
    finished_at: datetime | None = None
    """When the reload ended (UTC); set on every result `reload()` returns."""


def configuration_revision(folders: Sequence[Path], secret: str | None = None) -> str:
    """A short digest of every file under `folders` (relative name and bytes; dot-names skipped)
    and of the encryption secret's fingerprint (a changed secret decrypts the values anew).

    Two revisions are equal exactly when the configuration files are byte for byte the same, so
    an unchanged configuration is never reloaded and a changed one always is.
    """
    from policy._runtime_seam import PluginFileError, SandboxLimits, read_plugin_file

    cap = SandboxLimits().file_bytes

    def content(path: Path) -> bytes:
        """What the loader would read (a file it refuses counts as refused, unread)."""
        try:
            return read_plugin_file(path, cap)
        except PluginFileError as refused:
            return b"<refused: " + refused.message.encode() + b">\0"

    digest = hashlib.sha256()
    if secret is not None:
        digest.update(b"secret\0" + hashlib.sha256(secret.encode()).digest())
    for folder in folders:
        digest.update(str(folder).encode() + b"\0")
        if folder.is_file():
            digest.update(content(folder))
            continue
        if not folder.is_dir():
            digest.update(b"<absent>\0")
            continue
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if any(part.startswith(".") for part in relative.parts) or not path.is_file():
                continue
            digest.update(str(relative).encode() + b"\0")
            digest.update(content(path))
    return digest.hexdigest()[:16]


class PolicyWatcher:
    """Holds the `ChatRuntime` in force and replaces it when the configuration changes.

    `load()` builds a policy (e.g. `lambda: load_policy(org=[...], state_dir=...)`); `build`
    turns it into a runtime (default `ChatRuntime(policy)`; pass your own to add services).
    `watch` are the local folders/files whose changes trigger a reload; `references` and
    `state_dir` make each interval a fetch round from the configuration server first.
    `references` is a fixed sequence or a callable read before every round (e.g.
    `configuration_references`, returning `ConfigurationReferences` or a sequence), so the
    configurations named now are fetched and the ones no longer named are withdrawn.
    Read `watcher.runtime` once per request; `run()` is the task that keeps it current.
    """

    def __init__(
        self,
        load: Callable[[], Policy],
        *,
        build: Callable[[Policy], ChatRuntime] | None = None,
        watch: Sequence[Path | str] = (),
        references: Sequence[ConfigurationReference]
        | Callable[[], ConfigurationReferences | Sequence[ConfigurationReference]] = (),
        state_dir: Path | str | None = None,
        ca_bundle: Path | None = None,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        jitter: float = _DEFAULT_JITTER,
        retire_after_seconds: float = _DEFAULT_RETIRE_AFTER_SECONDS,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"PolicyWatcher interval must be > 0 seconds, got {interval!r}.")
        if not 0 <= jitter < 1:
            raise ValueError(f"PolicyWatcher jitter must be in [0, 1), got {jitter!r}.")
        if retire_after_seconds < 0:
            raise ValueError(
                f"PolicyWatcher retire_after_seconds must be >= 0, got {retire_after_seconds!r}."
            )
        if (callable(references) or references) and state_dir is None:
            raise ValueError(
                "PolicyWatcher needs state_dir to fetch configurations into (references given)."
            )
        if ca_bundle is not None:
            from runtime.config_fetch import tls_context

            tls_context(Path(ca_bundle))  # a CaBundleError (a ValueError) naming the file
        self._load = load
        self._build = build or _default_build
        self._watch = tuple(Path(p) for p in watch)
        self._read_sources = references if callable(references) else None
        self._named: tuple[ConfigurationReference, ...] = (
            () if callable(references) else tuple(references)
        )
        self._sources_error: str | None = None
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._ca_bundle = ca_bundle
        self._interval = interval
        self._jitter = jitter
        self._lock = asyncio.Lock()
        self._retire_after = retire_after_seconds
        self._retiring: dict[asyncio.Task[None], ChatRuntime] = {}
        self._last_change: ReloadResult | None = None
        self._named = self._read_references()[0]
        self._delivery = self._recorded_delivery()
        self._revision = self._current_revision()
        self._runtime = self._build(self._load())

    @property
    def runtime(self) -> ChatRuntime:
        """The runtime in force now; a request keeps the one it read until it ends."""
        return self._runtime

    @property
    def revision(self) -> str:
        """The configuration revision the runtime in force was built from."""
        return self._revision

    @property
    def policy(self) -> Policy:
        """The policy in force: the runtime's whole policy (every loaded configuration, with
        its MCP tools as last listed; `ChatRuntime.whole_policy`)."""
        return self._runtime.whole_policy

    @property
    def last_change(self) -> ReloadResult | None:
        """The latest reload that found changed files: swapped in, or kept out with its error."""
        return self._last_change

    @property
    def delivery(self) -> tuple[DeliveryStatus, ...]:
        """Each referenced configuration's status after the last fetch round: state (`current`,
        `last-known-good`, `never fetched`), ETag, last attempt and success, and the error of the
        last failure — what `policy status` shows, for an app's health page. Before the first
        round, what the state dir recorded."""
        return self._delivery

    @property
    def references(self) -> tuple[ConfigurationReference, ...]:
        """The configurations the last round fetched: the fixed ones, or what the callable read
        (with every configuration still in force when that reading withdrew nothing)."""
        return self._named

    @property
    def sources_error(self) -> str | None:
        """Why the last reading of the configuration sources withdrew nothing (the callable
        raised, a source could not be read whole, no source names a configuration), or None.
        The configurations in force stay and keep being fetched until a reading succeeds. An app
        whose sources name nothing and that has nothing in force has nothing to report (None)."""
        return self._sources_error

    def _recorded_delivery(self) -> tuple[DeliveryStatus, ...]:
        if self._state_dir is None or not self._named:
            return ()
        from runtime.config_fetch import recorded_statuses

        return recorded_statuses(self._state_dir, self._named)

    def _read_references(self) -> tuple[tuple[ConfigurationReference, ...], bool]:
        """What this round fetches, and whether it may withdraw what that does not name.

        Fixed references: themselves, withdrawing the rest. A callable: what it reads now; when
        the reading fails or may not withdraw (`ConfigurationReferences.withdrawal_refused`),
        also every configuration named before, and nothing is withdrawn."""
        if self._read_sources is None:
            return self._named, True
        from policy._runtime_seam import ConfigurationReferences

        refused: str | None
        try:
            read = self._read_sources()
        except Exception as error:  # the sources are the app's: keep serving what is in force
            from runtime.decision_log import redacted_error_message

            found = None
            refused = (
                "reading the configuration sources failed "
                f"({type(error).__name__}: {redacted_error_message(str(error))})"
            )
        else:
            found = (
                read
                if isinstance(read, ConfigurationReferences)
                else ConfigurationReferences(tuple(read), "references")
            )
            refused = found.withdrawal_refused
        named = found.references if found is not None else ()
        if refused is None:
            self._sources_error = None
            return named, True
        ids = {r.id for r in named}
        kept = (*named, *(r for r in self._named if r.id not in ids))
        if not kept and found is not None and not found.findings and not self._delivered():
            self._sources_error = None  # nothing named and nothing in force: nothing to keep
            return kept, False
        self._sources_error = refused
        _log.warning("%s; nothing is withdrawn, every configuration in force stays", refused)
        return kept, False

    def _delivered(self) -> tuple[Path, ...]:
        """The fetched copies in force, and the homes of damaged ones (so that damage, and its
        repair, is a new revision: the policy is loaded anew and fails closed)."""
        if self._state_dir is None:
            return ()
        from policy._runtime_seam import delivered_configurations

        delivered = delivered_configurations(self._state_dir)
        return (*delivered.roots, *(d.home for d in delivered.damaged))

    def _folders(self) -> tuple[Path, ...]:
        return (*self._watch, *self._delivered())

    def _current_revision(self) -> str:
        from policy._runtime_seam import configured_secret

        return configuration_revision(self._folders(), configured_secret())

    def next_delay(self) -> float:
        """Seconds until the next fetch round: the interval, give or take the jitter share."""
        spread = self._interval * self._jitter
        return self._interval + random.uniform(-spread, spread)

    async def fetch(self) -> tuple[DeliveryStatus, ...]:
        """One fetch round into `state_dir` (nothing without references); returns `delivery`.

        A callable `references` is read first: the configurations it names are fetched, the
        ones it no longer names withdrawn — unless the reading fails (see `sources_error`).
        Never raises for the sources, the server or the state dir: a configuration that fails
        keeps its copy and its status says why; a state dir that cannot be written fails every
        configuration of the round with that error. Failures are also logged. No reload runs
        during a round."""
        if self._state_dir is None or (self._read_sources is None and not self._named):
            return self._delivery
        from runtime.config_fetch import CaBundleError

        async with self._lock:
            try:
                statuses = await asyncio.to_thread(self._fetch_round, self._state_dir)
            except CaBundleError as error:  # the bundle changed on disk since the start
                statuses = self._round_failed(self._state_dir, str(error))
            except OSError as error:
                statuses = self._round_failed(
                    self._state_dir,
                    f"the state dir {self._state_dir} cannot be written: "
                    f"{error.strerror or type(error).__name__}",
                )
        self._delivery = statuses
        for status in statuses:
            if status.error:
                _log.warning("configuration %s: %s", status.id, status.error)
        return statuses

    def _fetch_round(self, state_dir: Path) -> tuple[DeliveryStatus, ...]:
        from runtime.config_fetch import fetch_configurations

        before = {r.id for r in self._named}
        self._named, withdraw = self._read_references()
        now = {r.id for r in self._named}
        for configuration_id in sorted(now - before):
            _log.info("configuration %s is named by the sources: fetching it", configuration_id)
        for configuration_id in sorted(before - now):
            _log.info("configuration %s is no longer named: withdrawing it", configuration_id)
        if not self._named and not withdraw:
            return ()  # nothing to fetch and nothing to withdraw: the state dir is not touched
        for reference in self._named:
            if reference.plain_http_warning is not None:
                _log.warning("%s", reference.plain_http_warning)
        return fetch_configurations(
            self._named, state_dir, ca_bundle=self._ca_bundle, withdraw=withdraw
        )

    def _round_failed(self, state_dir: Path, message: str) -> tuple[DeliveryStatus, ...]:
        from policy._runtime_seam import (
            STATE_LAST_KNOWN_GOOD,
            STATE_NEVER_FETCHED,
            DeliveredCopy,
            delivered_copy,
        )

        attempt = datetime.now(UTC).isoformat(timespec="seconds")
        failed = []
        for status in self._recorded_delivery():
            nothing = delivered_copy(state_dir, status.id) == DeliveredCopy(None)
            state = STATE_NEVER_FETCHED if nothing else STATE_LAST_KNOWN_GOOD
            failed.append(replace(status, state=state, last_attempt=attempt, error=message))
        return tuple(failed)

    async def reload(self) -> ReloadResult:
        """Load and swap in the configuration if its content changed; keep the old one if it fails.

        Never raises for a configuration that does not load or an app `build` that fails: the
        policy in force stays and the result's `error` says why (kept as `last_change`)."""
        result = replace(await self._reload(), finished_at=datetime.now(UTC))
        if result.old_revision != result.new_revision:
            self._last_change = result
        return result

    async def _reload(self) -> ReloadResult:
        async with self._lock:
            old = self._revision
            new = await asyncio.to_thread(self._current_revision)
            if new == old:
                return ReloadResult(False, old, new)
            try:
                policy = await asyncio.to_thread(self._load)
            except (UserSettingsError, OSError, ValueError) as error:
                return self._kept(old, new, str(error))
            except Exception as error:  # the app keeps serving with the policy in force
                _log.exception("loading the configuration failed unexpectedly")
                return self._kept(old, new, f"{type(error).__name__}: {error}")
            if (
                policy.configuration.fails_closed
                and not self._runtime.whole_policy.configuration.fails_closed
            ):
                broken = "; ".join(
                    b.message for b in policy.configuration.broken_organization_plugins
                )
                return self._kept(old, new, f"an organization plugin does not load: {broken}")
            try:
                runtime = self._build(policy)
            except Exception as error:  # an app's `build` (its tools, its services) failed
                _log.exception("building the runtime for the new configuration failed")
                return self._kept(old, new, f"{type(error).__name__}: {error}")
            self._retire(self._runtime)
            self._runtime = runtime
            self._revision = new
            _log.info("policy reloaded: configuration revision %s -> %s", old, new)
            return ReloadResult(True, old, new)

    def _retire(self, runtime: ChatRuntime) -> None:
        async def close_later() -> None:
            await asyncio.sleep(self._retire_after)
            await runtime.aclose()

        task = asyncio.create_task(close_later())
        self._retiring[task] = runtime
        task.add_done_callback(lambda done: self._retiring.pop(done, None))

    async def aclose(self) -> None:
        """Close the runtime in force and every replaced one still waiting to be closed."""
        waiting = dict(self._retiring)
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        await asyncio.gather(
            *(r.aclose() for r in (*waiting.values(), self._runtime)), return_exceptions=True
        )

    async def __aenter__(self) -> PolicyWatcher:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    def _kept(self, old: str, new: str, error: str) -> ReloadResult:
        _log.error(
            "policy reload failed, keeping configuration revision %s (candidate %s): %s",
            old,
            new,
            error,
        )
        return ReloadResult(False, old, new, error)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Fetch on the interval and reload on local file changes until `stop` is set.

        With a `state_dir`, its fetched copies are watched too: a `policy fetch` run by a timer
        into the same state dir is in force within moments, not at the next interval."""
        stop = stop or asyncio.Event()
        tasks = [asyncio.create_task(self._fetch_loop(stop))]
        folders = [p for p in self._watch if p.is_dir()]
        files = [p for p in self._watch if not p.is_dir() and p.parent.is_dir()]
        if self._state_dir is not None:
            from policy._runtime_seam import DELIVERED_DIR

            delivered = self._state_dir / DELIVERED_DIR
            try:
                delivered.mkdir(parents=True, exist_ok=True)
                folders.append(delivered)
            except OSError as error:
                _log.warning("%s cannot be watched: %s", delivered, error.strerror or error)
        if folders:
            tasks.append(asyncio.create_task(self._watch_loop(folders, stop, recursive=True)))
        if files:
            tasks.append(asyncio.create_task(self._watch_files(files, stop)))
        try:
            await stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _fetch_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.fetch()
            await self.reload()
            try:
                await asyncio.wait_for(stop.wait(), timeout=self.next_delay())
            except TimeoutError:
                continue

    async def _watch_loop(
        self,
        watched: Sequence[Path],
        stop: asyncio.Event,
        *,
        recursive: bool,
        only: Callable[[Path], bool] | None = None,
    ) -> None:
        from watchfiles import DefaultFilter, awatch

        def relevant(_change: object, path: str) -> bool:
            return only is not None and only(Path(path))

        async for _changes in awatch(
            *watched,
            stop_event=stop,
            debounce=200,
            recursive=recursive,
            watch_filter=DefaultFilter() if only is None else relevant,
        ):
            await self.reload()

    async def _watch_files(self, files: Sequence[Path], stop: asyncio.Event) -> None:
        """A watched file is followed through its folder: saving by replacing the file (what
        `policy settings set` and most editors do) ends a watch on the file itself, and a file
        that does not exist yet cannot be watched at all."""
        names = {file.absolute() for file in files}
        folders = sorted({file.parent for file in files})
        await self._watch_loop(
            folders, stop, recursive=False, only=lambda path: path.absolute() in names
        )


def _default_build(policy: Policy) -> ChatRuntime:
    from runtime.session import ChatRuntime

    return ChatRuntime(policy)
