"""Each person's own user settings in the chat database: PostgreSQL shared by every instance (or
one SQLite file), for `ChatRuntime(settings_by_subject=...)`.

A person's settings are the YAML of a user settings file, kept per `sub`; they are checked
before they are saved (`UserSettingsError` naming the line), and read back at most once per
`refresh_seconds` per person, so a request costs a lookup and a saved change counts within
that bound on every instance. A store that cannot be read keeps the settings last read (or
gives the organization's defaults, which a person's settings can only choose within).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from policy import UserSettings
    from runtime.session import SettingsBySubject

__all__ = ["StoredUserSettings", "UserSettingsTexts", "open_people_settings"]

_log = logging.getLogger(__name__)

_DEFAULT_REFRESH_SECONDS = 5.0


@runtime_checkable
class UserSettingsTexts(Protocol):
    """A store of each person's settings YAML (`PostgresChatStore` and `SqliteChatStore` are)."""

    def user_settings_text(self, subject: str) -> str | None: ...

    def save_user_settings_text(self, subject: str, text: str) -> None: ...


class StoredUserSettings:
    """Each person's own user settings kept in `store`, as `ChatRuntime` asks for them."""

    __slots__ = ("_held", "_lock", "_refresh", "_store")

    def __init__(
        self, store: UserSettingsTexts, *, refresh_seconds: float = _DEFAULT_REFRESH_SECONDS
    ) -> None:
        if not refresh_seconds >= 0:
            raise ValueError(
                f"StoredUserSettings(refresh_seconds=...) must be >= 0 (0: read on every ask), "
                f"got {refresh_seconds!r}."
            )
        self._store = store
        self._refresh = float(refresh_seconds)
        self._held: dict[str, tuple[float, str | None, UserSettings]] = {}
        self._lock = threading.Lock()

    def settings_for(self, subject: str) -> UserSettings:
        """The person's settings (the same object while their text is unchanged)."""
        now = time.monotonic()
        with self._lock:
            held = self._held.get(subject)
        if held is not None and now - held[0] < self._refresh:
            return held[2]
        try:
            text = self._store.user_settings_text(subject)
        except Exception as error:  # keep what was read; never a traceback on the request path
            _log.warning("The user settings of a person cannot be read now: %s", error)
            if held is not None:
                return held[2]
            from policy import UserSettings

            return UserSettings()
        settings = held[2] if held is not None and held[1] == text else _parsed(subject, text)
        with self._lock:
            self._held[subject] = (now, text, settings)
        return settings

    def save(self, subject: str, text: str) -> UserSettings:
        """Check `text` as a user settings file and keep it as the person's own settings."""
        settings = _parsed(subject, text)
        self._store.save_user_settings_text(subject, text)
        with self._lock:
            self._held[subject] = (time.monotonic(), text, settings)
        return settings


def _parsed(subject: str, text: str | None) -> UserSettings:
    from policy import UserSettings

    if text is None:
        return UserSettings()
    from policy._runtime_seam import parse_user_settings

    return parse_user_settings(text, f"the user settings of {subject}")


def open_people_settings(location: str) -> SettingsBySubject:
    """Where each signed-in person's own settings are, as a command line names it: a
    `postgresql://` address (the chat database's, shared by instances) or a folder of
    `<sub>.yaml` files (`policy.UserSettingsFolder`). `ValueError` names what is wrong."""
    from runtime.chat import open_chat_store

    text = location.strip()
    if text.startswith(("postgresql://", "postgres://")):
        store = open_chat_store(text)
        assert isinstance(store, UserSettingsTexts)
        return StoredUserSettings(store)
    from pathlib import Path

    from policy import UserSettingsFolder

    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise ValueError(
            f"'{location}' is neither a folder (of one <sub>.yaml user settings file per person) "
            "nor a postgresql:// address"
        )
    return UserSettingsFolder(folder)
