"""Where an organization's configurations come from: configuration ids and server URLs.

An IT department names, per device or instance, which configurations (a GUID each) to fetch from
which configuration server, the way AI Studio reads it: the environment
(`MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ID_00000` / `…_CONFIG_SERVER_URL_00000`, the combined
`…_CONFIGS` = `id@url;…`, the single pair without a slot number) or policy files
`config_00000.yaml` (`id`, `server_url`) in `$XDG_CONFIG_DIRS/mindwork-ai-studio` (fallback
`/etc/xdg/mindwork-ai-studio`); plus toolpolicy's own `TOOLPOLICY_CONFIG_SERVERS` and
`--config-server ID@URL`. The first source with at least one valid pair wins; sources are never
merged. AI Studio's policy file `config_encryption_secret.yaml` is read here too (the secret's
order is `policy.secrets.configured_secret`'s). This module only reads local files and variables;
fetching is `runtime.config_fetch`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from policy._dataclass import dataclass
from policy._patterns import LazyPattern
from policy.config.guid import is_canonical_guid
from policy.configuration import Finding, Severity
from policy.provenance import SourceLocation

_ENV_PREFIX = "MINDWORK_AI_STUDIO_ENTERPRISE_"
_ENV_OWN = "TOOLPOLICY_CONFIG_SERVERS"
_POLICY_DIR_NAME = "mindwork-ai-studio"
SECRET_FILE_NAME = "config_encryption_secret.yaml"
"""AI Studio's policy file for the encryption secret (key `config_encryption_secret`)."""
_SECRET_FILE_KEY = "config_encryption_secret"
DELIVERED_DIR = "delivered"
"""Below `--state-dir`: one folder per fetched configuration id, the copy in force."""
STATUS_FILE = "delivery.json"
"""Below `--state-dir`: per configuration id, what the last fetch rounds found."""

_SLOT = LazyPattern(r"^_?(\d{1,5})$")


@dataclass(frozen=True, slots=True)
class ConfigurationReference:
    """One configuration to fetch: its id (a lower-case GUID) and the server that serves it."""

    id: str
    server_url: str
    source: str
    """Where the pair was found: `--config-server`, an environment variable, a policy file."""

    @property
    def download_url(self) -> str:
        """`<server url without trailing slash>/<id>.zip`, as AI Studio's configuration server."""
        return f"{self.server_url.rstrip('/')}/{self.id}.zip"

    @property
    def plain_http_warning(self) -> str | None:
        """The warning for a server on plain http (None on https): without TLS anyone on the
        network path can hand the device another configuration — unlock what the organization
        locked — or replay an old one. It is fetched all the same (AI Studio's devices accept
        such addresses and read the same settings); `policy fetch` and `policy status` print
        this, `PolicyWatcher` logs it each round."""
        if not self.server_url.lower().startswith("http:"):
            return None
        return (
            f"configuration {self.id} ({self.source}) is fetched over plain http: anyone on the "
            "network path can change or replace it; serve it over https"
        )


@dataclass(frozen=True, slots=True)
class ConfigurationReferences:
    """The winning source's configurations and what was wrong in the sources read."""

    references: tuple[ConfigurationReference, ...]
    source: str
    findings: tuple[Finding, ...] = ()

    @property
    def withdrawal_refused(self) -> str | None:
        """Why this reading may not withdraw the configurations it does not name, or None.

        Only a reading that read every source whole and names at least one configuration
        withdraws the others: a policy file that is ignored, an entry that is skipped or a
        folder that cannot be read may be the very configuration that is missing, and no
        configuration at all is what a lost environment (`sudo`, a service unit without the
        variables) reads as. Absent is not empty: the copies in force stay until the sources
        name the configurations that remain (`policy fetch` and `PolicyWatcher` both ask this).
        """
        if self.findings:
            problems = "; ".join(f.message for f in self.findings)
            return f"the configuration sources could not be read whole ({problems})"
        if not self.references:
            return "no configuration source names a configuration"
        return None


def _parse_reference(text: str, source: str) -> ConfigurationReference:
    """`ID@URL` (as `--config-server` and `TOOLPOLICY_CONFIG_SERVERS` take it); raises ValueError."""
    identifier, at, url = text.strip().partition("@")
    if not at:
        raise ValueError(f"{source}: '{text.strip()}' is not ID@URL")
    return _reference(identifier, url, source)


def _reference(identifier: str, url: str, source: str) -> ConfigurationReference:
    from policy.secrets import without_user_info

    guid = identifier.strip().lower().strip("{}")
    if not is_canonical_guid(guid):
        if re.search(r"[:/]", identifier):  # an address where the id belongs: may hold a password
            raise ValueError(
                f"{source}: an entry starts with an address, not a configuration id (a GUID); "
                "write ID@URL"
            )
        raise ValueError(f"{source}: '{identifier.strip()}' is not a configuration id (a GUID)")
    address = url.strip()
    if not re.match(r"^https?://[^/\s]+", address, re.IGNORECASE):
        raise ValueError(
            f"{source}: '{without_user_info(address)}' is not a configuration server address "
            "(http:// or https://)"
        )
    return ConfigurationReference(guid, address, source)


def _slot_order(suffix: str) -> tuple[int, int, int, str]:
    number = int(suffix)
    return (number, 0 if len(suffix) == 5 else 1, len(suffix), suffix)


def _pairs_from_mapping(
    values: Mapping[str, str], id_key: str, url_key: str, combined_key: str | None, source: str
) -> tuple[list[ConfigurationReference], list[Finding]]:
    """Indexed slots (by number), then the combined list, then the single pair; first id wins."""
    found: list[ConfigurationReference] = []
    findings: list[Finding] = []
    seen: set[str] = set()

    def add(identifier: str, url: str, where: str) -> None:
        if not identifier.strip() and not url.strip():
            return
        if not identifier.strip() or not url.strip():
            findings.append(_finding(f"{where}: an id without a server URL (or the reverse)"))
            return
        try:
            reference = _reference(identifier, url, where)
        except ValueError as error:
            findings.append(_finding(str(error)))
            return
        if reference.id not in seen:
            seen.add(reference.id)
            found.append(reference)

    suffixes: set[str] = set()
    for key in values:
        for prefix in (id_key, url_key):
            if key.startswith(prefix) and _SLOT.match(key[len(prefix) :]):
                suffixes.add(key[len(prefix) :].lstrip("_"))
    for suffix in sorted(suffixes, key=_slot_order):
        identifier = values.get(f"{id_key}_{suffix}", values.get(f"{id_key}{suffix}", ""))
        url = values.get(f"{url_key}_{suffix}", values.get(f"{url_key}{suffix}", ""))
        add(identifier, url, f"{source} {id_key}_{suffix}")
    if combined_key:
        for item in values.get(combined_key, "").split(";"):
            if item.strip():
                identifier, _, url = item.partition("@")
                add(identifier, url, f"{source} {combined_key}")
    add(values.get(id_key, ""), values.get(url_key, ""), f"{source} {id_key}")
    return found, findings


def _finding(message: str) -> Finding:
    return Finding(Severity.WARNING, "configuration-reference", message, None)


def _read_policy_file(path: Path) -> dict[str, str] | None:
    """AI Studio's YAML subset: `key: value` lines and `#` comments; one pair of quotes stripped.
    A line without `:` or with unbalanced quotes voids the whole file (None)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeError):
        return None
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if not colon:
            return None
        value = value.strip()
        if value[:1] in ("'", '"'):
            if len(value) < 2 or value[-1] != value[0]:
                return None
            value = value[1:-1]
        elif value.endswith(("'", '"')):
            return None
        values.setdefault(key.strip(), value)
    return values


def policy_directories(environ: Mapping[str, str]) -> tuple[Path, ...]:
    """Each `$XDG_CONFIG_DIRS` entry + `mindwork-ai-studio`, else `/etc/xdg/mindwork-ai-studio`."""
    entries = [e for e in environ.get("XDG_CONFIG_DIRS", "").split(":") if e.strip()]
    roots = entries or ["/etc/xdg"]
    return tuple(Path(root) / _POLICY_DIR_NAME for root in roots)


@dataclass(frozen=True, slots=True)
class _PolicyFileSecret:
    """The encryption secret found in AI Studio's policy files, and where (never shown itself)."""

    value: str
    path: Path


def secret_from_policy_files(
    directories: Sequence[Path],
) -> tuple[_PolicyFileSecret | None, tuple[Finding, ...]]:
    """`config_encryption_secret.yaml` (`config_encryption_secret: …`) in the policy folders.

    The first folder whose file has a non-empty value wins, as for the configuration pairs; a file
    that is not a valid policy file is ignored whole and named in a finding (its text never is).
    """
    findings: list[Finding] = []
    for directory in directories:
        path = directory / SECRET_FILE_NAME
        if not path.is_file():
            continue
        values = _read_policy_file(path)
        if values is None:
            findings.append(_void_file(path))
            continue
        value = values.get(_SECRET_FILE_KEY, "").strip()
        if value:
            return _PolicyFileSecret(value, path), tuple(findings)
    return None, tuple(findings)


def _void_file(path: Path) -> Finding:
    return Finding(
        Severity.WARNING,
        "configuration-reference",
        f"{path} is not a valid policy file (a line without ':' or with unbalanced quotes); "
        "the whole file is ignored",
        SourceLocation(str(path), 0),
    )


def _from_policy_files(
    directories: Sequence[Path],
) -> tuple[list[ConfigurationReference], list[Finding]]:
    """`config<slot>.yaml` files; for each key the first non-empty value across the folders wins."""
    merged: dict[str, str] = {}
    findings: list[Finding] = []
    for directory in directories:
        try:
            names = sorted(p.name for p in directory.iterdir() if p.is_file())
        except FileNotFoundError:
            continue  # no policy folder there: nothing named
        except OSError as error:
            findings.append(
                Finding(
                    Severity.WARNING,
                    "configuration-reference",
                    f"the policy folder {directory} cannot be read "
                    f"({error.strerror or type(error).__name__}); its policy files are not read",
                    SourceLocation(str(directory), 0),
                )
            )
            continue
        for name in names:
            match = re.match(r"^config(_?\d{1,5})\.yaml$", name)
            if not match:
                continue
            values = _read_policy_file(directory / name)
            if values is None:
                findings.append(_void_file(directory / name))
                continue
            suffix = match.group(1).lstrip("_")
            for key in ("id", "server_url"):
                if values.get(key, "").strip():
                    merged.setdefault(f"{key}_{suffix}", values[key])
    found, more = _pairs_from_mapping(merged, "id", "server_url", None, "policy file")
    return found, findings + more


def configuration_references(
    explicit: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    directories: Sequence[Path] | None = None,
) -> ConfigurationReferences:
    """The configurations this device or instance fetches: the first source with a valid pair.

    Order: `--config-server` values, `TOOLPOLICY_CONFIG_SERVERS` (`ID@URL;…`), AI Studio's policy
    files, AI Studio's environment variables. A malformed `--config-server` raises ValueError
    (the administrator typed it); malformed entries elsewhere are findings and skipped.
    """
    env = os.environ if environ is None else environ
    folders = policy_directories(env) if directories is None else tuple(directories)
    findings: list[Finding] = []
    if explicit:
        references = tuple(_parse_reference(text, "--config-server") for text in explicit)
        return ConfigurationReferences(_unique(references), "--config-server")
    own: list[ConfigurationReference] = []
    for item in env.get(_ENV_OWN, "").split(";"):
        if item.strip():
            try:
                own.append(_parse_reference(item, _ENV_OWN))
            except ValueError as error:
                findings.append(_finding(str(error)))
    if own:
        return ConfigurationReferences(_unique(own), _ENV_OWN, tuple(findings))
    from_files, file_findings = _from_policy_files(folders)
    findings.extend(file_findings)
    if from_files:
        return ConfigurationReferences(tuple(from_files), "policy files", tuple(findings))
    prefix = _ENV_PREFIX
    values = {k[len(prefix) :]: v for k, v in env.items() if k.startswith(prefix)}
    from_env, env_findings = _pairs_from_mapping(
        values, "CONFIG_ID", "CONFIG_SERVER_URL", "CONFIGS", "environment"
    )
    findings.extend(env_findings)
    return ConfigurationReferences(
        tuple(from_env), "environment" if from_env else "", tuple(findings)
    )


def _unique(references: Sequence[ConfigurationReference]) -> tuple[ConfigurationReference, ...]:
    seen: dict[str, ConfigurationReference] = {}
    for reference in references:
        seen.setdefault(reference.id, reference)
    return tuple(seen.values())


# --- what was fetched ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeliveryStatus:
    """What the fetch rounds found for one configuration (the status block `policy status` shows)."""

    id: str
    server_url: str
    state: str
    """`current` (the last attempt succeeded), `last-known-good` (it failed; an earlier copy is in
    force) or `never fetched` (no copy yet)."""
    etag: str | None = None
    last_attempt: str | None = None
    last_success: str | None = None
    error: str | None = None

    def document(self) -> dict[str, Any]:
        return asdict(self)


_ENTITY_TAG = LazyPattern(r'(?:W/)?"[\x21\x23-\x7e]*"')
_MAX_ETAG_CHARACTERS = 256


def entity_tag_problem(value: object) -> str | None:
    """What is wrong with an ETag, or None for a valid one: an entity tag of RFC 9110
    (`"…"` or `W/"…"`, printable ASCII without `"` inside), at most _MAX_ETAG_CHARACTERS long.
    Only such a tag is kept and sent back as `If-None-Match`."""
    if not isinstance(value, str):
        return f"an ETag is text, not {type(value).__name__}"
    if len(value) > _MAX_ETAG_CHARACTERS:
        return f"the ETag is {len(value)} characters long (at most {_MAX_ETAG_CHARACTERS})"
    if not _ENTITY_TAG.fullmatch(value):
        return f'{ascii(value)[:80]} is not an entity tag ("…" or W/"…" of printable ASCII)'
    return None


STATE_CURRENT = "current"
STATE_LAST_KNOWN_GOOD = "last-known-good"
STATE_NEVER_FETCHED = "never fetched"


_COPY_NAME = LazyPattern(r"^[0-9a-f]{16,64}$")
POINTER_FILE = "current.json"
"""In `<state_dir>/delivered/<id>/`: names the copy in force, `{"copy": "<folder>"}`."""


def delivered_home(state_dir: Path, configuration_id: str) -> Path:
    """`<state_dir>/delivered/<id>/`: the configuration's copies and the pointer to the one in force.

    Each downloaded archive is unpacked into its own folder (named by its content digest) that is
    never changed afterwards; the copy in force changes by replacing `current.json` atomically. So
    a reader — this process or another one on the same state dir — reads the pointer once and
    sees one whole copy, the old or the new, never a folder that is half swapped or missing."""
    return state_dir / DELIVERED_DIR / configuration_id


@dataclass(frozen=True, slots=True)
class DeliveredCopy:
    """The copy of one configuration in force: its folder, or what is wrong with the state that
    should name it (`problem`, naming the file or folder). Both None: nothing was delivered."""

    folder: Path | None
    problem: str | None = None


def delivered_copy(state_dir: Path, configuration_id: str) -> DeliveredCopy:
    """The copy in force for `configuration_id`, checked: a `current.json` that cannot be read,
    is not `{"copy": "<hex>"}` or names a folder that is gone (or holds no plugin.lua), and copies
    kept without a `current.json`, are damage — never "nothing delivered", which would drop a
    delivered lockdown without a word. A home with no copy and no pointer (a first fetch that
    failed, a round in the middle of its first download) holds nothing yet."""
    home = delivered_home(state_dir, configuration_id)
    pointer = home / POINTER_FILE
    if not home.is_dir():  # never delivered, or retired by deleting its folder
        return DeliveredCopy(None)
    try:
        text = pointer.read_text(encoding="utf-8")
    except FileNotFoundError:
        try:
            kept = [p.name for p in home.iterdir() if p.is_dir() and _COPY_NAME.match(p.name)]
        except OSError:
            kept = []
        if not kept:
            return DeliveredCopy(None)
        return DeliveredCopy(None, f"{pointer} is missing, though copies are kept in {home}")
    except (OSError, UnicodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8"
        return DeliveredCopy(None, f"{pointer} cannot be read ({reason or error})")
    try:
        name = json.loads(text).get("copy")
    except (ValueError, AttributeError):
        return DeliveredCopy(None, f'{pointer} is not {{"copy": "<folder>"}} (truncated?)')
    if not isinstance(name, str) or not _COPY_NAME.match(name):
        return DeliveredCopy(None, f"{pointer} names no copy folder ({ascii(name)[:60]})")
    folder = home / name
    if not folder.is_dir():
        return DeliveredCopy(None, f"{pointer} names the copy {name}, but {folder} is missing")
    from policy.plugins import PLUGIN_FILE_NAME

    if next(folder.rglob(PLUGIN_FILE_NAME), None) is None:
        return DeliveredCopy(None, f"the copy in force {folder} holds no {PLUGIN_FILE_NAME}")
    return DeliveredCopy(folder)


def delivered_folder(state_dir: Path, configuration_id: str) -> Path | None:
    """The folder of the intact copy in force for `configuration_id`, or None (see
    `delivered_copy` for whether None means nothing delivered or damage)."""
    return delivered_copy(state_dir, configuration_id).folder


def set_copy_in_force(state_dir: Path, configuration_id: str, copy: str) -> None:
    """Point `current.json` at the copy folder `copy` (a hex digest) in one atomic rename."""
    if not _COPY_NAME.match(copy):
        raise ValueError(f"'{copy}' is not a copy folder name (16 to 64 lower-case hex digits)")
    home = delivered_home(state_dir, configuration_id)
    temporary = home / f".{POINTER_FILE}.{os.urandom(8).hex()}.tmp"
    temporary.write_text(json.dumps({"copy": copy}), encoding="utf-8")
    os.replace(temporary, home / POINTER_FILE)


@dataclass(frozen=True, slots=True)
class _DamagedDelivery:
    """A delivered configuration whose copy in force cannot be read (`problem` says why)."""

    id: str
    home: Path
    problem: str

    @property
    def message(self) -> str:
        """What the loader reports for it (the configuration fails closed)."""
        return (
            f"the fetched configuration {self.id} cannot be read: {self.problem}; "
            "`policy fetch` downloads it again"
        )


@dataclass(frozen=True, slots=True)
class _DeliveredConfigurations:
    """The fetched configurations in force (organization plugin folders, sorted by id) and those
    whose copy is damaged — which load as broken organization plugins: their last-known-good copy
    stands in, else every tool is switched off."""

    roots: tuple[Path, ...]
    damaged: tuple[_DamagedDelivery, ...] = ()


def delivered_configurations(state_dir: Path) -> _DeliveredConfigurations:
    """Every configuration delivered into `state_dir`, intact or damaged (see `delivered_copy`)."""
    root = state_dir / DELIVERED_DIR
    try:
        ids = sorted(p.name for p in root.iterdir() if p.is_dir() and is_canonical_guid(p.name))
    except OSError:
        return _DeliveredConfigurations(())
    roots: list[Path] = []
    damaged: list[_DamagedDelivery] = []
    for configuration_id in ids:
        copy = delivered_copy(state_dir, configuration_id)
        if copy.folder is not None:
            roots.append(copy.folder)
        elif copy.problem is not None:
            home = delivered_home(state_dir, configuration_id)
            damaged.append(_DamagedDelivery(configuration_id, home, copy.problem))
    return _DeliveredConfigurations(tuple(roots), tuple(damaged))


@dataclass(frozen=True, slots=True)
class _StatusRecords:
    """The valid records of `<state_dir>/delivery.json` and what is wrong with the file, if
    anything (`problem` names the file). A damaged record is left out whole: its ETag is never
    sent and its state never shown as if it were true."""

    records: dict[str, DeliveryStatus]
    problem: str | None = None


_STATES = (STATE_CURRENT, STATE_LAST_KNOWN_GOOD, STATE_NEVER_FETCHED)


def _record_problem(item: object) -> str | None:
    """What is wrong with one entry of `configurations`, or None."""
    if not isinstance(item, dict):
        return f"is {type(item).__name__}, not an object"
    identifier = item.get("id")
    if not isinstance(identifier, str) or not is_canonical_guid(identifier):
        return f"has the id {ascii(identifier)[:60]}, not a lower-case configuration GUID"
    for key in ("server_url", "state"):
        if not isinstance(item.get(key), str):
            return f"({identifier}) has no text '{key}'"
    if item["state"] not in _STATES:
        return f"({identifier}) has the state {ascii(item['state'])[:40]}, not one of {_STATES}"
    if item.get("etag") is not None and (problem := entity_tag_problem(item["etag"])):
        return f"({identifier}) {problem}"
    for key in ("last_attempt", "last_success", "error"):
        if item.get(key) is not None and not isinstance(item[key], str):
            return f"({identifier}) has a '{key}' that is {type(item[key]).__name__}, not text"
    return None


def read_status_file(state_dir: Path) -> _StatusRecords:
    """`<state_dir>/delivery.json`, checked: a file that does not exist holds no records; one that
    cannot be read, is not JSON of the shape `write_statuses` writes, or holds a damaged record
    gives the records that are valid and a `problem` naming the file and what is wrong."""
    path = state_dir / STATUS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _StatusRecords({})
    except OSError as error:
        return _StatusRecords({}, f"{path} cannot be read ({error.strerror or error})")
    except UnicodeDecodeError as error:
        return _StatusRecords({}, f"{path} is not UTF-8 text (byte {error.start})")
    except ValueError as error:
        return _StatusRecords({}, f"{path} is not valid JSON ({error})")
    entries = data.get("configurations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return _StatusRecords({}, f'{path} is not {{"configurations": [...]}}')
    records: dict[str, DeliveryStatus] = {}
    problems: list[str] = []
    for index, item in enumerate(entries):
        problem = _record_problem(item)
        if problem is None and item["id"] in records:
            problem = f"({item['id']}) repeats a configuration listed before"
        if problem is not None:
            problems.append(f"configurations[{index}] {problem}")
            continue
        records[item["id"]] = DeliveryStatus(**{k: item.get(k) for k in DeliveryStatus.__slots__})
    if not problems:
        return _StatusRecords(records)
    more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
    return _StatusRecords(records, f"{path}: {'; '.join(problems[:2])}{more}")


def read_statuses(state_dir: Path) -> dict[str, DeliveryStatus]:
    """The valid status records kept in `<state_dir>/delivery.json` (see `read_status_file`)."""
    return read_status_file(state_dir).records


def write_statuses(state_dir: Path, statuses: Sequence[DeliveryStatus]) -> None:
    """Replace `<state_dir>/delivery.json` atomically."""
    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_dir / STATUS_FILE
    temporary = target.with_name(f".{STATUS_FILE}.tmp")
    document = {"configurations": [s.document() for s in statuses]}
    temporary.write_text(json.dumps(document, indent=2), encoding="utf-8")
    os.replace(temporary, target)
