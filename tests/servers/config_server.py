"""A configuration server like AI Studio's: `GET /<id>.zip` with an ETag, 304 for a matching
`If-None-Match`, and switches a test flips to make it go down, stall, stream without a length or
serve a hostile archive."""

from __future__ import annotations

import asyncio
import hashlib
import io
import stat
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
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
    """A (deflated) zip archive of `files` (name → content); `symlinks` adds symbolic links."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


@dataclass
class ConfigServer:
    """What the server serves: archives by configuration id. `down` answers 503 to everything;
    `stall` waits that many seconds before answering; `chunked` sends bodies without a length;
    `status` answers that status (no body) to every request; `redirect_to` redirects there;
    `etag_text` and `trickle` make it hostile; `no_etag` makes it a plain file server."""

    archives: dict[str, bytes] = field(default_factory=dict)
    down: bool = False
    stall: float = 0.0
    chunked: bool = False
    status: int | None = None
    redirect_to: str | None = None
    etag_text: str | None = None
    """Sent as the ETag instead of the archive's digest (a hostile server's, say)."""
    no_etag: bool = False
    """Sends no ETag and so never answers 304: every download is the whole archive."""
    trickle: float = 0.0
    """Seconds between the bytes of a download: the body sent one byte at a time."""
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    answers: list[int] = field(default_factory=list)
    """The status of each answer, in the order of `requests` (200 is a download, 304 none)."""

    def etag(self, configuration_id: str) -> str:
        if self.etag_text is not None:
            return self.etag_text
        return '"' + hashlib.sha256(self.archives[configuration_id]).hexdigest()[:16] + '"'

    def app(self) -> Starlette:
        async def archive(request: Request) -> Response:
            response = await answer(request)
            self.answers.append(response.status_code)
            return response

        async def answer(request: Request) -> Response:
            name = request.path_params["name"]
            self.requests.append((name, request.headers.get("if-none-match")))
            if self.stall:
                await asyncio.sleep(self.stall)
            if self.down:
                return Response("maintenance", status_code=503)
            if self.status is not None:
                return Response(status_code=self.status)
            if self.redirect_to is not None:
                return Response(status_code=302, headers={"Location": f"{self.redirect_to}/{name}"})
            configuration_id = name.removesuffix(".zip")
            if not name.endswith(".zip") or configuration_id not in self.archives:
                return Response("not found", status_code=404)
            tag = self.etag(configuration_id)
            if self.no_etag:
                return Response(self.archives[configuration_id], media_type="application/zip")
            if request.headers.get("if-none-match") == tag:
                return Response(status_code=304, headers={"ETag": tag})
            if self.trickle:
                body = self.archives[configuration_id]

                async def drip() -> AsyncIterator[bytes]:
                    for index in range(len(body)):
                        await asyncio.sleep(self.trickle)
                        yield body[index : index + 1]

                return StreamingResponse(
                    drip(), media_type="application/zip", headers={"ETag": tag}
                )
            if self.chunked:
                body = self.archives[configuration_id]

                async def pieces() -> AsyncIterator[bytes]:
                    for start in range(0, len(body), 1 << 20):
                        yield body[start : start + (1 << 20)]

                return StreamingResponse(
                    pieces(), media_type="application/zip", headers={"ETag": tag}
                )
            return Response(
                self.archives[configuration_id],
                media_type="application/zip",
                headers={"ETag": tag},
            )

        return Starlette(routes=[Route("/configs/{name}", archive)])


def assistant_text(plugin_id: str) -> str:
    """An assistant plugin.lua (not a configuration): delivered next to one, skipped by loading."""
    return plugin_text(plugin_id, name="Helper").replace(
        'TYPE = "CONFIGURATION"', 'TYPE = "ASSISTANT"'
    )
