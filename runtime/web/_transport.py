"""An httpx transport that can only connect to the addresses the retrieval service validated.

The URL keeps its host name, so the Host header, TLS SNI and certificate verification all use the
name; only the TCP connect is redirected to the checked IPs. Nothing here resolves a name, so a
DNS answer that changes between check and connect cannot take effect.
"""

from __future__ import annotations

import ssl
import typing
from collections.abc import AsyncIterator, Iterable, Sequence
from functools import lru_cache

import httpcore
import httpx

from runtime.web.addresses import IPAddress, normalize_host


class _PinnedNetworkBackend(httpcore.AsyncNetworkBackend):
    """Dials each validated address in turn; any other host or port is refused outright."""

    def __init__(self, host: str, port: int, addresses: Sequence[IPAddress]) -> None:
        self._host = normalize_host(host)
        self._port = port
        self._addresses = tuple(dict.fromkeys(addresses))
        self._inner = httpcore.AnyIOBackend()

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
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
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
        await self._inner.sleep(seconds)


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
    """HTTP/1.1 to one origin, over connections made only to its validated addresses."""

    def __init__(
        self,
        host: str,
        port: int,
        addresses: Sequence[IPAddress],
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or default_ssl_context(),
            network_backend=_PinnedNetworkBackend(host, port, addresses),
            http1=True,
            http2=False,
            retries=0,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, typing.AsyncIterable)
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
        with _MappedErrors():
            response = await self._pool.handle_async_request(core_request)
        assert isinstance(response.stream, typing.AsyncIterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


@lru_cache(maxsize=1)
def default_ssl_context() -> ssl.SSLContext:
    """Certificate and host-name verification against certifi's roots; built once per process."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
