"""Content-Encoding decoders whose output arrives in small pieces, so a size cap holds in memory.

httpx decodes a whole network chunk at once; a 64 KiB gzip chunk can expand to 64 MiB before any
counting starts. These decoders produce small pieces (_PIECE_SIZE for zlib, a few times that for brotli) per step.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from itertools import chain
from typing import Protocol

from policy import ToolPolicyError

_PIECE_SIZE = 8 * 1024


class UnsupportedContentEncoding(ToolPolicyError, ValueError):
    """The server compressed the body in a way we did not offer."""


class BodyDecodingError(ToolPolicyError, ValueError):
    """The body is not what its Content-Encoding says."""


class _Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def finish(self) -> Iterator[bytes]: ...


class _ZlibDecoder:
    """gzip or zlib-wrapped deflate; a raw deflate stream is detected on the first bytes.

    A gzip body may hold several members one after the other (RFC 1952); each is read in turn, as
    browsers do. Bytes after the last member that start no member are ignored.
    """

    def __init__(self, wbits: int, raw_fallback: bool, *, members: bool = False) -> None:
        self._wbits = wbits
        self._inflater = zlib.decompressobj(wbits)
        self._raw_fallback = raw_fallback
        self._members = members
        self._started = False
        self._later_member = False
        self._ended = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        if not self._started and self._raw_fallback:
            self._started = True
            try:
                zlib.decompressobj(zlib.MAX_WBITS).decompress(data[:2])
            except zlib.error:
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        yield from self._drain(data)

    def _next_member(self, pending: bytes) -> bytes | None:
        """The input of the member after a finished one, or None when the body is over."""
        if not self._members:
            return None
        pending = self._inflater.unused_data + pending
        if pending:
            self._inflater = zlib.decompressobj(self._wbits)
            self._later_member = True
        return pending

    def _drain(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while not self._ended:
            if self._inflater.eof:
                following = self._next_member(pending)
                if not following:
                    return
                pending = following
            fresh = self._later_member and not self._inflater.eof
            try:
                piece = self._inflater.decompress(pending, _PIECE_SIZE)
            except zlib.error as error:
                if fresh:
                    self._ended = True
                    return
                raise BodyDecodingError(str(error)) from error
            if piece:
                self._later_member = False
                yield piece
            pending = self._inflater.unconsumed_tail
            more_members = self._members and self._inflater.eof and self._inflater.unused_data
            if not pending and len(piece) < _PIECE_SIZE and not more_members:
                return

    def finish(self) -> Iterator[bytes]:
        yield from self._drain(b"")
        if self._ended:
            return
        try:
            rest = self._inflater.flush(_PIECE_SIZE)
        except zlib.error as error:
            raise BodyDecodingError(str(error)) from error
        if rest:
            yield rest


class _BrotliDecoder:
    def __init__(self) -> None:
        import brotli

        self._decompressor = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        # The limit is a soft one (brotli rounds it up to its own buffer size), and output can stay
        # pending after all input was taken, so ask with empty input until nothing more comes.
        piece = self._process(data)
        while piece:
            yield piece
            piece = self._process(b"")

    def _process(self, data: bytes) -> bytes:
        import brotli

        try:
            piece: bytes = self._decompressor.process(data, output_buffer_limit=_PIECE_SIZE)
        except brotli.error as error:
            raise BodyDecodingError(str(error)) from error
        return piece

    def finish(self) -> Iterator[bytes]:
        return iter(())


class _IdentityDecoder:
    def feed(self, data: bytes) -> Iterator[bytes]:
        for start in range(0, len(data), _PIECE_SIZE):
            yield data[start : start + _PIECE_SIZE]

    def finish(self) -> Iterator[bytes]:
        return iter(())


def _decoder_for(encoding: str) -> _Decoder:
    if encoding in ("gzip", "x-gzip"):
        return _ZlibDecoder(zlib.MAX_WBITS | 16, raw_fallback=False, members=True)
    if encoding == "deflate":
        return _ZlibDecoder(zlib.MAX_WBITS, raw_fallback=True)
    if encoding == "br":
        return _BrotliDecoder()
    raise UnsupportedContentEncoding(encoding)


class BodyDecoder:
    """Undoes a Content-Encoding header (possibly several codings) piece by piece."""

    def __init__(self, content_encoding: str) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        chain = [_decoder_for(c) for c in codings if c and c != "identity"]
        chain.reverse()
        self._chain: list[_Decoder] = chain or [_IdentityDecoder()]

    def feed(self, data: bytes) -> Iterator[bytes]:
        """Decoded pieces of at most _PIECE_SIZE bytes for the next raw bytes."""
        return self._through(0, data, final=False)

    def finish(self) -> Iterator[bytes]:
        """Whatever the decoders still hold once the raw body has ended."""
        return self._through(0, b"", final=True)

    def _through(self, index: int, data: bytes, *, final: bool) -> Iterator[bytes]:
        decoder = self._chain[index]
        produced = chain(decoder.feed(data) if data else (), decoder.finish() if final else ())
        if index == len(self._chain) - 1:
            yield from produced
            return
        for piece in produced:
            yield from self._through(index + 1, piece, final=False)
        if final:
            yield from self._through(index + 1, b"", final=True)
