"""One fetch round: download each configuration from its server, validate it, then put it in force.

For every configuration id: `GET <server>/<id>.zip` with `If-None-Match` (the ETag of the copy in
force). 304 keeps the copy (never read as "empty"); 200 with the archive already in force (the same
SHA-256 digest: a server that sends no ETag, which is said once) keeps it too, nothing re-applied;
another 200 is unpacked safely into a staging folder,
every plugin in it is loaded and checked (each loads; one configuration plugin whose `ID` is the
configuration id) and only then is it put in force, by replacing a pointer in one rename so that a
reader in any process sees the whole old copy or the whole new one. Anything that goes wrong —
server down, TLS failure, 404, broken zip, a hostile archive, a plugin that does not load — keeps
the copy in force and records the error. A configuration that no source references any more is
withdrawn. Verification is never turned off: an intranet server's own CA is added with a PEM
bundle (`ca_bundle`), and from an https source every redirect hop must be https (checked before
the hop is sent). Each download — every hop and the whole body — must end within the timeout, so
a server that trickles its answer cannot hold the round or the state dir's lock; only a valid
ETag is kept and sent back; a damaged status file or copy in force is named, never trusted.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import io
import logging
import os
import shutil
import ssl
import stat
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import httpx

from policy import ConfigurationReference, DeliveryStatus, ToolPolicyError
from policy._runtime_seam import (
    DELIVERED_DIR,
    POINTER_FILE,
    STATE_CURRENT,
    STATE_LAST_KNOWN_GOOD,
    STATE_NEVER_FETCHED,
    STATUS_FILE,
    DeliveredCopy,
    delivered_copy,
    delivered_folder,
    delivered_home,
    entity_tag_problem,
    read_status_file,
    set_copy_in_force,
    write_statuses,
)

_log = logging.getLogger(__name__)

MAX_ARCHIVE_BYTES = 16 * 1024 * 1024
MAX_UNPACKED_BYTES = 32 * 1024 * 1024
MAX_FILES = 500
DEFAULT_TIMEOUT_SECONDS = 30.0
_LOCK_FILE = ".delivery.lock"


class ConfigurationArchiveError(ToolPolicyError, ValueError):
    """A downloaded archive that is refused; the message says which entry and why."""

    code = "configuration-archive"


class CaBundleError(ToolPolicyError, ValueError):
    """The PEM bundle of extra root certificates cannot be used; the message names the file."""

    code = "ca-bundle"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _entry_path(name: str) -> PurePosixPath:
    """The relative path of one archive entry, or ConfigurationArchiveError (AI Studio's rules)."""
    text = name.replace("\\", "/")
    if not text or "\0" in text:
        raise ConfigurationArchiveError("an entry has an empty name or contains NUL")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise ConfigurationArchiveError(f"entry '{text}' is an absolute path")
    parts = [p for p in text.split("/") if p != ""]
    if any(p in (".", "..") for p in parts):
        raise ConfigurationArchiveError(f"entry '{text}' contains a '.' or '..' segment")
    if not parts:
        raise ConfigurationArchiveError(f"entry '{text}' names no file")
    return PurePosixPath(*parts)


def _unpack_archive(data: bytes, target: Path) -> None:
    """Unpack a configuration zip into the empty folder `target`, or refuse it whole.

    Refused: a broken zip, absolute paths, `.`/`..` segments, symbolic links and other non-regular
    entries, directory entries with data, duplicate files, more than MAX_FILES files or
    MAX_UNPACKED_BYTES unpacked (counted while reading, not trusted from the header), no
    `plugin.lua`. Only the plugins' files are written: a file outside every folder that holds a
    `plugin.lua` (a README next to the plugin folder, `__MACOSX/`) is checked but left out.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        entries = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as error:
        raise ConfigurationArchiveError(
            f"the download is not a valid zip archive ({error})"
        ) from None
    from policy._runtime_seam import PLUGIN_FILE_NAME

    files = [e for e in entries if not e.is_dir()]
    if len(files) > MAX_FILES:
        raise ConfigurationArchiveError(
            f"the archive holds {len(files)} files (at most {MAX_FILES})"
        )
    paths: list[PurePosixPath] = []
    seen: set[PurePosixPath] = set()
    for entry in entries:
        path = _entry_path(entry.filename)
        paths.append(path)
        mode = entry.external_attr >> 16
        if entry.is_dir():
            if entry.file_size:
                raise ConfigurationArchiveError(f"directory entry '{path}' carries data")
            continue
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            raise ConfigurationArchiveError(
                f"entry '{path}' is not a regular file (a symbolic link or device)"
            )
        if path in seen:
            raise ConfigurationArchiveError(f"entry '{path}' appears twice")
        seen.add(path)
    plugin_folders = {p.parent for p in seen if p.name == PLUGIN_FILE_NAME}
    if not plugin_folders:
        raise ConfigurationArchiveError(f"the archive holds no {PLUGIN_FILE_NAME}")
    budget = MAX_UNPACKED_BYTES
    for entry, path in zip(entries, paths, strict=True):
        if entry.is_dir() or plugin_folders.isdisjoint(path.parents):
            continue
        destination = target.joinpath(*path.parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            with archive.open(entry) as source, destination.open("xb") as sink:
                while chunk := source.read(65536):
                    budget -= len(chunk)
                    if budget < 0:
                        raise ConfigurationArchiveError(
                            f"the archive unpacks to more than {MAX_UNPACKED_BYTES} bytes"
                        )
                    sink.write(chunk)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError) as error:
            raise ConfigurationArchiveError(f"entry '{path}' cannot be read ({error})") from None


def _validate_unpacked(folder: Path, configuration_id: str) -> None:
    """Load every plugin of the unpacked archive the way `load_policy` will: as organization
    plugins. Each must load (language and assistant plugins are skipped, as the loader skips
    them) and there must be exactly one configuration plugin, whose `ID` is the configuration id;
    so what is put in force is exactly what was checked."""
    from policy._runtime_seam import (
        PluginLoadError,
        PluginOrigin,
        discover_plugin_files,
        load_plugin,
    )

    configuration_plugins: list[tuple[str, str]] = []
    for plugin_file in discover_plugin_files(folder):
        shown_file = f"<archive>/{plugin_file.relative_to(folder).as_posix()}"
        try:
            plugin = load_plugin(plugin_file, PluginOrigin.ORGANIZATION)
        except PluginLoadError as error:
            if error.not_configuration:
                continue
            shown = error.message.replace(str(plugin_file), shown_file)
            shown = shown.replace(str(folder), "<archive>")
            raise ConfigurationArchiveError(f"its plugin does not load: {shown}") from None
        configuration_plugins.append((shown_file, plugin.id))
    if not configuration_plugins:
        raise ConfigurationArchiveError('it holds no configuration plugin (TYPE = "CONFIGURATION")')
    if len(configuration_plugins) > 1:
        files = ", ".join(name for name, _ in configuration_plugins)
        raise ConfigurationArchiveError(
            f"it holds {len(configuration_plugins)} configuration plugins ({files}); "
            "a configuration is delivered as one"
        )
    ((shown_file, plugin_id),) = configuration_plugins
    if plugin_id.lower() != configuration_id:
        raise ConfigurationArchiveError(
            f"its plugin's ID is {plugin_id} ({shown_file}), not the configuration id "
            f"{configuration_id}"
        )


def _copy_name(archive: bytes) -> str:
    """The folder an archive's copy is kept in: its SHA-256 digest (the first 32 hex digits), so
    the copy in force tells which archive it came from."""
    return hashlib.sha256(archive).hexdigest()[:32]


def _put_in_force(staging: Path, state_dir: Path, configuration_id: str, archive: bytes) -> None:
    """Make the validated copy in `staging` the one in force, atomically for every reader.

    The copy moves to `<home>/<content digest>/` (kept as is when that copy is the intact one in
    force already; a folder of that name that is not, perhaps damaged, is replaced), then
    `current.json` is replaced in one rename to point at it. The copy it replaced stays until the
    next change, so a reader that read the old pointer a moment ago still finds every file."""
    home = delivered_home(state_dir, configuration_id)
    version = _copy_name(archive)
    target = home / version
    previous = delivered_folder(state_dir, configuration_id)
    if target.is_dir() and previous != target:  # not the intact copy in force: maybe damaged
        discarded = home / f".discarded-{os.urandom(8).hex()}"
        os.replace(target, discarded)
        shutil.rmtree(discarded, ignore_errors=True)
    if not target.is_dir():
        os.replace(staging, target)
    set_copy_in_force(state_dir, configuration_id, version)
    kept = {version, previous.name if previous is not None else ""}
    for folder in home.iterdir():
        if folder.is_dir() and not folder.name.startswith(".") and folder.name not in kept:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _round_lock(state_dir: Path) -> Iterator[None]:
    """One fetch round at a time per state dir (another process, e.g. a timer's `policy fetch`,
    waits); where the platform has no `fcntl`, rounds are not serialized across processes."""
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    with (state_dir / _LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tls_context(ca_bundle: Path | None) -> ssl.SSLContext:
    """The verifying TLS context for configuration servers: the system's and certifi's roots plus
    the PEM bundle, if any. Built once per bundle (and again when the file changes); raises
    CaBundleError naming the file when it holds no usable certificate."""
    if ca_bundle is None:
        return _cached_context(None, 0)
    try:
        changed = ca_bundle.stat().st_mtime_ns
    except OSError as error:
        raise CaBundleError(
            f"the CA bundle {ca_bundle} cannot be read: {error.strerror or error}"
        ) from None
    return _cached_context(str(ca_bundle), changed)


@functools.lru_cache(maxsize=8)
def _cached_context(ca_bundle: str | None, _changed: int) -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        import certifi

        context.load_verify_locations(cafile=certifi.where())
    except (ImportError, OSError):
        pass
    if ca_bundle is not None:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (ssl.SSLError, OSError, UnicodeError) as error:
            raise CaBundleError(
                f"the CA bundle {ca_bundle} is not a PEM file of certificates ({error}); give "
                "the intranet CA's certificate in PEM form (-----BEGIN CERTIFICATE-----)"
            ) from None
    return context


def _client(ca_bundle: Path | None, timeout: float) -> httpx.Client:
    return httpx.Client(verify=tls_context(ca_bundle), timeout=timeout, trust_env=False)


def _describe_failure(error: Exception, reference: ConfigurationReference) -> str:
    from runtime._network import could_not_resolve, host_of

    server = _shown_server(reference.server_url)
    if could_not_resolve(error):
        return f"could not resolve {host_of(reference.server_url)} ({server})"
    if isinstance(error, httpx.ConnectError):
        cause = str(error) or "connection failed"
        if "CERTIFICATE_VERIFY_FAILED" in cause or "certificate" in cause.lower():
            return f"the TLS certificate of {server} could not be verified ({cause})"
        return f"{server} could not be reached ({cause})"
    if isinstance(error, httpx.TimeoutException):
        return f"{server} did not answer in time ({error or 'no answer within the timeout'})"
    if isinstance(error, httpx.HTTPError):
        return f"the download from {server} failed ({type(error).__name__}: {error})"
    return str(error)


def _unexpected_status(status: int, reference: ConfigurationReference) -> str:
    """What an answer other than 200 or 304 means for the administrator, and what to check."""
    asked = f"the server answered {status} for {reference.id}.zip"
    if status == 404:
        return (
            f"{asked}: no such file; check the configuration id and that the zip is on the server"
        )
    if status in (401, 403):
        return f"{asked}: the download is not allowed; check the server's access rules"
    if status == 304:
        return f"{asked} although no copy was asked for by ETag; the server or a proxy misbehaves"
    if status >= 500:
        return f"{asked}: the server failed or is down for maintenance"
    return f"{asked}; a configuration server answers 200 with the zip, or 304 when unchanged"


def _shown_server(url: str) -> str:
    """The server address as status and errors show it: no user info, query values masked."""
    from runtime.web.addresses import redact_url_for_log

    return redact_url_for_log(url)


@dataclass(frozen=True, slots=True)
class _Downloaded:
    """A download's answer: 304 (nothing read) or 200 with the archive and the server's ETag."""

    status: int
    etag: str | None = None
    body: bytes = b""
    sent_no_etag: bool = False
    """The server sent no ETag header at all (one it sent and we refused is logged apart)."""


class _Refused(Exception):
    """A download that ended without an archive; the message is the status record's error."""


def _download(
    client: httpx.Client, reference: ConfigurationReference, etag: str | None
) -> _Downloaded:
    """GET the archive, following redirects hop by hop: from an https source every hop must be
    https, refused before the plain request is sent (nothing leaves over plain http, not even the
    ETag). Raises _Refused or an httpx/OS error."""
    headers = {"If-None-Match": etag} if etag else {}
    request = client.build_request("GET", reference.download_url, headers=headers)
    secure = request.url.scheme == "https"
    for _hop in range(client.max_redirects + 1):
        response = client.send(request, stream=True)
        try:
            following = response.next_request
            if following is None:
                return _answer(response, reference, etag)
        finally:
            response.close()
        if secure and following.url.scheme != "https":
            raise _Refused(
                f"the server redirected {reference.id}.zip to a plain http address "
                f"({_shown_server(str(following.url))}); refused, every hop must stay on https"
            )
        request = following
    raise _Refused(
        f"the server redirected {reference.id}.zip more than {client.max_redirects} times"
    )


def _answer(
    response: httpx.Response, reference: ConfigurationReference, etag: str | None
) -> _Downloaded:
    if response.status_code == 304 and etag:
        return _Downloaded(304, etag)
    if response.status_code != 200:
        raise _Refused(_unexpected_status(response.status_code, reference))
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > MAX_ARCHIVE_BYTES:
        raise _Refused(f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    body = bytearray()
    for chunk in response.iter_bytes():
        body.extend(chunk)
        if len(body) > MAX_ARCHIVE_BYTES:
            raise _Refused(f"the archive is larger than {MAX_ARCHIVE_BYTES} bytes")
    sent_no_etag = "ETag" not in response.headers
    return _Downloaded(200, _received_etag(response, reference), bytes(body), sent_no_etag)


def _received_etag(response: httpx.Response, reference: ConfigurationReference) -> str | None:
    """The server's ETag when it is a valid entity tag; another one is dropped (and logged): the
    copy is kept without it and downloaded whole next time, and no later round sends it back."""
    raw = response.headers.get_list("ETag")
    if not raw:
        return None
    value = raw[-1]
    problem = entity_tag_problem(value)
    if problem is None:
        return value
    _log.warning(
        "configuration %s: the server's ETag is not used: %s; the copy is downloaded whole "
        "each time until the server sends a valid one",
        reference.id,
        problem,
    )
    return None


def _within_deadline(timeout: float, work: Callable[[], _Downloaded]) -> _Downloaded:
    """`work()` run on a worker thread and given up after `timeout` seconds in all: a server that
    trickles its answer a byte at a time (each read well within the read timeout) cannot hold
    the round, and the state dir's lock, any longer. The abandoned thread only ever fills its own
    buffer; it ends at its next read timeout, or when the round closes the client."""
    outcome: list[_Downloaded | BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # handed to the waiting thread
            outcome.append(error)

    worker = threading.Thread(target=run, name="toolpolicy-config-download", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        raise httpx.TimeoutException(f"the download took longer than {timeout:g} s in all")
    (result,) = outcome
    if isinstance(result, BaseException):
        raise result
    return result


def _fetch_one(
    reference: ConfigurationReference,
    state_dir: Path,
    previous: DeliveryStatus | None,
    client: httpx.Client,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
) -> DeliveryStatus:
    """One configuration: keep, replace or fail; the status that results (never raises for I/O).

    The download — every redirect hop and the whole body — must finish within `timeout`
    seconds."""
    attempt = _now()
    copy = delivered_copy(state_dir, reference.id)
    etag = previous.etag if previous is not None and copy.folder is not None else None
    last_success = previous.last_success if previous is not None else None

    def failed(message: str) -> DeliveryStatus:
        if copy.problem is not None:
            message = f"{message}; {_damage_note(copy.problem)}"
        return DeliveryStatus(
            reference.id,
            _shown_server(reference.server_url),
            STATE_NEVER_FETCHED if copy == DeliveredCopy(None) else STATE_LAST_KNOWN_GOOD,
            etag,
            attempt,
            last_success,
            message,
        )

    try:
        downloaded = _within_deadline(timeout, lambda: _download(client, reference, etag))
    except _Refused as refused:
        return failed(str(refused))
    except (httpx.HTTPError, httpx.InvalidURL, ssl.SSLError, OSError, ValueError) as error:
        return failed(_describe_failure(error, reference))
    if downloaded.status == 304:
        return DeliveryStatus(
            reference.id, _shown_server(reference.server_url), STATE_CURRENT, etag, attempt, attempt
        )
    said_before = copy.folder is not None and previous is not None and etag is None
    if downloaded.sent_no_etag and not said_before:
        _log.warning(
            "configuration %s: %s sends no ETag, so every fetch downloads the whole archive; "
            "an unchanged one is recognised by its SHA-256 digest and not applied again "
            "(said once)",
            reference.id,
            _shown_server(reference.server_url),
        )
    fetched = DeliveryStatus(
        reference.id,
        _shown_server(reference.server_url),
        STATE_CURRENT,
        downloaded.etag,
        attempt,
        attempt,
    )
    if copy.folder is not None and copy.folder.name == _copy_name(downloaded.body):
        _log.info(
            "configuration %s: unchanged (same digest); the copy in force stays", reference.id
        )
        return fetched
    home = delivered_home(state_dir, reference.id)
    try:
        home.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=home))
    except OSError as error:
        return failed(f"the copy could not be saved in {home}: {error.strerror or error}")
    try:
        _unpack_archive(downloaded.body, staging)
        _validate_unpacked(staging, reference.id)
        _put_in_force(staging, state_dir, reference.id, downloaded.body)
    except ConfigurationArchiveError as error:
        return failed(f"the archive from {reference.id}.zip is refused: {error}")
    except OSError as error:
        return failed(f"the copy could not be saved in {home}: {error.strerror or error}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return fetched


def delivery_report(
    state_dir: Path, references: Sequence[ConfigurationReference], *, others: bool = False
) -> tuple[tuple[DeliveryStatus, ...], str | None]:
    """What the rounds recorded in `state_dir` for each referenced configuration, `never
    fetched` for one no round has fetched yet; with `others`, also the records of ids no source
    names now (sorted by id then). Second: what is wrong with the status file (naming it), or
    None. The one reading `policy status` and `PolicyWatcher` share."""
    recorded = read_status_file(state_dir)
    records = recorded.records
    statuses = [
        _as_it_stands(state_dir, r.id, _shown_server(r.server_url), records.get(r.id))
        for r in references
    ]
    if others:
        named = {r.id for r in references}
        statuses.extend(
            _as_it_stands(state_dir, key, status.server_url, status)
            for key, status in records.items()
            if key not in named
        )
        statuses.sort(key=lambda s: s.id)
    return tuple(statuses), recorded.problem


def _damage_note(problem: str) -> str:
    """What a damaged copy in force means, after what is wrong with it."""
    return (
        f"the copy in force is damaged: {problem}; commands use its last-known-good copy or "
        "switch every tool off until a fetch downloads it again"
    )


def _as_it_stands(
    state_dir: Path, configuration_id: str, server: str, record: DeliveryStatus | None
) -> DeliveryStatus:
    """A status record checked against the copy in force: no record while a copy is in force,
    or a damaged copy (whatever its record says), is not current."""
    copy = delivered_copy(state_dir, configuration_id)
    if copy.problem is not None:
        base = record or DeliveryStatus(configuration_id, server, STATE_LAST_KNOWN_GOOD)
        return replace(base, state=STATE_LAST_KNOWN_GOOD, error=_damage_note(copy.problem))
    if record is not None:
        return record
    if copy.folder is None:
        return DeliveryStatus(configuration_id, server, STATE_NEVER_FETCHED)
    return DeliveryStatus(
        configuration_id,
        server,
        STATE_LAST_KNOWN_GOOD,
        error=f"a copy is in force, but {STATUS_FILE} keeps no valid record of its fetching",
    )


def recorded_statuses(
    state_dir: Path, references: Sequence[ConfigurationReference], *, others: bool = False
) -> tuple[DeliveryStatus, ...]:
    """The statuses of `delivery_report`, without what is wrong with the file."""
    return delivery_report(state_dir, references, others=others)[0]


def fetch_configurations(
    references: Sequence[ConfigurationReference],
    state_dir: Path,
    *,
    ca_bundle: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    withdraw: bool = True,
) -> tuple[DeliveryStatus, ...]:
    """One round over every referenced configuration, then withdraw the unreferenced ones.

    With `withdraw=False` (the sources could not be read whole, see
    `ConfigurationReferences.withdrawal_refused`) nothing is withdrawn: a copy in force that the
    round does not name stays in force, and so does its status record. The result is also
    written to `<state_dir>/delivery.json` for `policy status`. Rounds on one state dir run one
    at a time, across processes too. Raises CaBundleError for an unusable `ca_bundle` (before
    anything is fetched) and OSError when `state_dir` cannot be written.
    """
    tls_context(ca_bundle)
    from policy._runtime_seam import SecretMask, address_secrets, mask_in_logs

    # httpx logs each request's address as given: its user info and parameter values are secrets
    mask_in_logs(SecretMask.of(s for r in references for s in address_secrets(r.server_url)))
    with _round_lock(state_dir):
        return _fetch_round(references, state_dir, ca_bundle, timeout, withdraw)


def _fetch_round(
    references: Sequence[ConfigurationReference],
    state_dir: Path,
    ca_bundle: Path | None,
    timeout: float,
    withdraw: bool,
) -> tuple[DeliveryStatus, ...]:
    recorded = read_status_file(state_dir)
    if recorded.problem is not None:
        _log.warning(
            "the status records are damaged: %s; they are not used (no ETag from them is sent) "
            "and this round writes the file anew",
            recorded.problem,
        )
    previous = recorded.records
    with _client(ca_bundle, timeout) as client:
        statuses = tuple(
            _fetch_one(reference, state_dir, previous.get(reference.id), client, timeout)
            for reference in references
        )
    referenced = {r.id for r in references}
    home = state_dir / DELIVERED_DIR
    kept: list[DeliveryStatus] = []
    if home.is_dir():
        for folder in sorted(home.iterdir()):
            if not folder.is_dir() or folder.name.startswith(".") or folder.name in referenced:
                continue
            if withdraw:
                (folder / POINTER_FILE).unlink(missing_ok=True)  # withdrawn for readers at once
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.name in previous:
                kept.append(previous[folder.name])  # still in force: its record stays too
    write_statuses(state_dir, (*statuses, *kept))
    return statuses
