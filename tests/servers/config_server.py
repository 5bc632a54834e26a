"""A configuration server like AI Studio's: `GET /<id>.zip` with an ETag, 304 for a matching
`If-None-Match`, and switches a test flips to make it go down or serve a hostile archive."""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def plugin_text(configuration_id: str, settings: str = "", name: str = "Fleet") -> str:
    """A configuration plugin.lua with the given ID and CONFIG["SETTINGS"] lines."""
    return f'''ID = "{configuration_id}"
TYPE = "CONFIGURATION"
NAME = "{name}"
DESCRIPTION = "Delivered by the configuration server"
VERSION = "1.0.0"
AUTHORS = {{ "IT" }}
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://example.org/ai"
CATEGORIES = {{ "CORE" }}
TARGET_GROUPS = {{ "EVERYONE" }}
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
CONFIG = {{}}
CONFIG["SETTINGS"] = {{}}
{settings}
'''


def zip_of(files: dict[str, str | bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    """A zip archive of `files` (name → content); `symlinks` adds symbolic-link entries."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


@dataclass
class ConfigServer:
    """What the server serves: archives by configuration id; `down` answers 503 to everything."""

    archives: dict[str, bytes] = field(default_factory=dict)
    down: bool = False
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def etag(self, configuration_id: str) -> str:
        return '"' + hashlib.sha256(self.archives[configuration_id]).hexdigest()[:16] + '"'

    def app(self) -> Starlette:
        async def archive(request: Request) -> Response:
            name = request.path_params["name"]
            self.requests.append((name, request.headers.get("if-none-match")))
            if self.down:
                return Response("maintenance", status_code=503)
            configuration_id = name.removesuffix(".zip")
            if not name.endswith(".zip") or configuration_id not in self.archives:
                return Response("not found", status_code=404)
            tag = self.etag(configuration_id)
            if request.headers.get("if-none-match") == tag:
                return Response(status_code=304, headers={"ETag": tag})
            return Response(
                self.archives[configuration_id],
                media_type="application/zip",
                headers={"ETag": tag},
            )

        return Starlette(routes=[Route("/configs/{name}", archive)])
