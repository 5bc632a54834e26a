"""Hostile bodies and hops: every one ends within the caps, with a clear error or the right text."""

from __future__ import annotations

import asyncio
import gzip
import re
import zlib

import pytest

from runtime.web.retrieval import (
    MAX_REDIRECTS,
    WebRetrievalError,
    WebRetrievalTimedOut,
    retrieve,
)
from tests.security._kit import options
from tests.security._raw_server import answer, raw_server, redirect

MIB = 1024 * 1024
TOO_LARGE = "The response body is too large. Maximum allowed size is 5242880 bytes."


def _gzip(body: bytes, coding: str = "gzip") -> bytes:
    return answer(body, content_type="text/plain", headers={"Content-Encoding": coding})


async def test_every_member_of_a_multi_member_gzip_body_is_read() -> None:
    body = gzip.compress(b"first member. ") + gzip.compress(b"second member.")
    async with raw_server({"/multi": _gzip(body)}) as server:
        page = await retrieve(server.url("/multi"), options())
    assert page.body_text == "first member. second member."


async def test_bytes_after_the_last_member_that_start_no_member_are_ignored() -> None:
    body = gzip.compress(b"only member") + b"\x00" * 64
    async with raw_server({"/padded": _gzip(body)}) as server:
        page = await retrieve(server.url("/padded"), options())
    assert page.body_text == "only member"


async def test_many_small_gzip_members_still_meet_the_cap() -> None:
    member = gzip.compress(b"A" * MIB)
    async with raw_server({"/members": _gzip(member * 8)}) as server:
        with pytest.raises(WebRetrievalError, match=re.escape(TOO_LARGE)):
            await retrieve(server.url("/members"), options())


@pytest.mark.parametrize("coding", ["gzip, gzip", "gzip,deflate", "br, gzip"])
async def test_stacked_codings_are_undone_in_pieces_and_meet_the_cap(coding: str) -> None:
    import brotli

    inner = b"A" * (40 * MIB)
    encoders = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}
    body = inner
    for name in (c.strip() for c in coding.split(",")):
        body = encoders[name](body)
    async with raw_server({"/stack": _gzip(body, coding)}) as server:
        with pytest.raises(WebRetrievalError, match=re.escape(TOO_LARGE)):
            await retrieve(server.url("/stack"), options())


async def test_a_huge_chunk_is_cut_at_the_cap() -> None:
    async def endless_chunk(writer: asyncio.StreamWriter) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"FFFFFFFFFF\r\n"
        )
        for _ in range(200):
            writer.write(b"x" * 65536)
            await writer.drain()

    async with raw_server({"/chunk": endless_chunk}) as server:
        with pytest.raises(WebRetrievalError, match=re.escape(TOO_LARGE)):
            await retrieve(server.url("/chunk"), options())


async def test_a_declared_length_over_the_cap_is_refused_before_the_body() -> None:
    head = answer(b"", content_type="text/plain", headers={"Content-Length": str(6 * MIB)})
    async with raw_server({"/big": head}) as server:
        with pytest.raises(WebRetrievalError, match=re.escape(TOO_LARGE)):
            await retrieve(server.url("/big"), options())


async def test_a_body_longer_than_its_content_length_is_read_only_as_declared() -> None:
    lie = answer(
        b"hello world, and more", content_type="text/plain", headers={"Content-Length": "5"}
    )
    async with raw_server({"/lie": lie}) as server:
        page = await retrieve(server.url("/lie"), options())
    assert page.body_text == "hello"


async def test_a_body_shorter_than_its_content_length_fails() -> None:
    short = answer(b"hello", content_type="text/plain", headers={"Content-Length": "500"})
    async with raw_server({"/short": short}) as server:
        with pytest.raises(WebRetrievalError, match=r"^Loading the web page failed: "):
            await retrieve(server.url("/short"), options())


async def test_a_trickling_body_ends_at_the_overall_timeout() -> None:
    async def trickle(writer: asyncio.StreamWriter) -> None:
        writer.write(answer(b"", content_type="text/plain", headers={"Content-Length": "100000"}))
        for _ in range(600):
            writer.write(b"x")
            await writer.drain()
            await asyncio.sleep(0.05)

    async with raw_server({"/slow": trickle}) as server:
        with pytest.raises(WebRetrievalTimedOut, match="timed out after 1 seconds"):
            await retrieve(server.url("/slow"), options(timeout_seconds=1))


async def test_huge_headers_are_refused() -> None:
    async def headers(writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(2000):
            writer.write(b"X-Padding: " + b"a" * 1000 + b"\r\n")
            await writer.drain()

    async with raw_server({"/headers": headers}) as server:
        with pytest.raises(WebRetrievalError, match=r"^Loading the web page failed: "):
            await retrieve(server.url("/headers"), options())


async def test_two_addresses_redirecting_to_each_other_stop_after_the_limit() -> None:
    routes = {"/a": redirect("/b", "301 Moved"), "/b": redirect("/a", "307 Temporary")}
    async with raw_server(routes) as server:
        with pytest.raises(WebRetrievalError, match=f"more than {MAX_REDIRECTS} redirects"):
            await retrieve(server.url("/a"), options())
    assert len(server.paths) == MAX_REDIRECTS + 1


async def test_a_text_document_with_a_late_nul_is_no_text() -> None:
    body = b"A" * 200_000 + b"\x00" + b"B" * 10
    async with raw_server({"/nul": answer(body, content_type="application/json")}) as server:
        with pytest.raises(WebRetrievalError, match="does not contain readable text"):
            await retrieve(server.url("/nul"), options())
