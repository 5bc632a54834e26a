"""An httpx transport that can only connect to the addresses the retrieval service validated.

The URL keeps its host name, so the Host header, TLS SNI and certificate verification all use the
name; only the TCP connect is redirected to the checked IPs. Nothing here resolves a name, so a
DNS answer that changes between check and connect cannot take effect.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import typing
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache

import httpcore
import httpx

from runtime.web.addresses import IPAddress, normalize_host


@contextmanager
def _raised_as(
    timed_out: type[httpcore.TimeoutException], failed: type[httpcore.NetworkError]
) -> Iterator[None]:
    """A timeout or a socket/TLS error as the httpcore error httpcore's own backends raise."""
    try:
        yield
    except TimeoutError as error:
        raise timed_out(str(error) or type(error).__name__) from error
    except OSError as error:  # ssl.SSLError included
        raise failed(_reason(error)) from error


def _reason(error: OSError) -> str:
    """What failed, without the address and port asyncio's messages quote: the caller names
    the page, and the address it resolved to is not the model's business."""
    if isinstance(error, ssl.SSLError):
        return str(error)
    if error.errno is not None:
        return os.strerror(error.errno)
    return type(error).__name__


class _AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection as asyncio streams.

    httpcore's anyio backend wraps every read and write in a cancel scope and looks up the
    running async library each time; asyncio alone does the same I/O for about a third less of
    the CPU a page costs to fetch (`bench/fetch_extract.py`).
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _raised_as(httpcore.ReadTimeout, httpcore.ReadError):
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _raised_as(httpcore.WriteTimeout, httpcore.WriteError):
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()

    async def aclose(self) -> None:
        # As httpcore's own backends: no TLS close_notify, whose answer a server may never send.
        transport = self._writer.transport
        if not transport.is_closing():
            transport.abort()
            await asyncio.sleep(0)  # the loop closes the socket on its next turn

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with _raised_as(httpcore.ConnectTimeout, httpcore.ConnectError):
                async with asyncio.timeout(timeout):
                    await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException:
            await self.aclose()
            raise
        return self

    def get_extra_info(self, info: str) -> typing.Any:
        name = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }.get(info)
        return self._writer.get_extra_info(name) if name is not None else None


class _PinnedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Dials each validated address in turn; any other host or port is refused outright."""

    def __init__(self, host: str, port: int, addresses: Sequence[IPAddress]) -> None:
        self._host = normalize_host(host)
        self._port = port
        self._addresses = tuple(dict.fromkeys(addresses))

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if normalize_host(host) != self._host or port != self._port:
            raise httpcore.ConnectError("The connection was not to the validated host.")
        last_error: Exception = httpcore.ConnectError("No validated address to connect to.")
        for address in self._addresses:
            try:
                return await _connect(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                last_error = error
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("Unix sockets are never used for web pages.")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


async def _connect(
    address: str,
    port: int,
    timeout: float | None,
    local_address: str | None,
    socket_options: Iterable[httpcore.SOCKET_OPTION] | None,
) -> _AsyncioStream:
    """A TCP connection to one IP address (a literal: nothing is resolved)."""
    with _raised_as(httpcore.ConnectTimeout, httpcore.ConnectError):
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                address, port, local_addr=(local_address, 0) if local_address else None
            )
    stream = _AsyncioStream(reader, writer)
    try:
        for option in socket_options or ():
            writer.get_extra_info("socket").setsockopt(*option)
    except OSError as error:
        await stream.aclose()
        raise httpcore.ConnectError(_reason(error)) from error
    return stream


_TIMEOUTS = (httpcore.TimeoutException,)
_FAILURES = (httpcore.NetworkError, httpcore.UnsupportedProtocol)


class _MappedErrors:
    """httpcore errors as the httpx errors callers already handle."""

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        if isinstance(error, _TIMEOUTS):
            raise httpx.TimeoutException(str(error)) from error
        if isinstance(error, httpcore.ProtocolError):
            # The detail quotes the server's bytes; it must not reach the model or the user.
            raise httpx.RemoteProtocolError("The server's answer is not valid HTTP.") from error
        if isinstance(error, _FAILURES):
            raise httpx.TransportError(str(error) or type(error).__name__) from error


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: typing.AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _MappedErrors():
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class PinnedTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 to one origin, over one connection made only to its validated addresses.

    One connection, not a pool: retrieval sends one request per transport (a redirect is a new
    hop, checked again, with a transport of its own; only an operating-system sign-in sends its
    legs after the first, on the same connection while the server keeps it), so a pool's queue, locks and bookkeeping
    would be work for nothing on every page.
    """

    def __init__(
        self,
        host: str,
        port: int,
        addresses: Sequence[IPAddress],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._ssl_context = ssl_context or default_ssl_context()
        self._backend = _PinnedNetworkBackend(host, port, addresses)
        self._connection: httpcore.AsyncHTTPConnection | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, AsyncIterable)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        if self._connection is None or self._connection.is_closed():
            # A second request (a sign-in leg) after the server closed the first connection.
            self._connection = httpcore.AsyncHTTPConnection(
                origin=core_request.url.origin,
                ssl_context=self._ssl_context,
                http1=True,
                http2=False,
                retries=0,
                network_backend=self._backend,
            )
        with _MappedErrors():
            response = await self._connection.handle_async_request(core_request)
        assert isinstance(response.stream, AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        if self._connection is not None:
            await self._connection.aclose()


@lru_cache(maxsize=1)
def default_ssl_context() -> ssl.SSLContext:
    """Certificate and host-name verification against certifi's roots; built once per process."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
