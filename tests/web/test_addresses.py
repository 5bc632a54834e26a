"""Address classification, host literals, request keys, address finding and log redaction."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policy.hosts import is_loopback_host
from runtime.web.addresses import (
    TRANSLATION_PREFIXES,
    AddressClass,
    classify_ip,
    default_port,
    embedded_ipv4s,
    find_web_addresses,
    is_host_allowed,
    is_local_host_name,
    parse_allowed_private_hosts,
    parse_host_literal,
    redact_url_for_log,
    request_key,
    web_origin,
)

NEVER = AddressClass.NEVER_ALLOWED
PRIVATE = AddressClass.NON_PUBLIC
PUBLIC = AddressClass.PUBLIC


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("0.0.0.0", NEVER),
        ("0.255.255.255", NEVER),
        ("127.0.0.1", NEVER),
        ("127.255.255.254", NEVER),
        ("169.254.169.254", NEVER),
        ("224.0.0.1", NEVER),
        ("240.0.0.1", NEVER),
        ("255.255.255.255", NEVER),
        ("10.0.0.1", PRIVATE),
        ("100.64.0.1", PRIVATE),
        ("100.127.255.255", PRIVATE),
        ("172.16.0.1", PRIVATE),
        ("172.31.255.255", PRIVATE),
        ("192.168.1.1", PRIVATE),
        ("192.0.0.8", PRIVATE),
        ("192.0.2.1", PRIVATE),
        ("198.18.0.1", PRIVATE),
        ("198.19.255.255", PRIVATE),
        ("198.51.100.7", PRIVATE),
        ("203.0.113.9", PRIVATE),
        ("8.8.8.8", PUBLIC),
        ("100.128.0.1", PUBLIC),
        ("172.32.0.1", PUBLIC),
        ("198.20.0.1", PUBLIC),
        ("223.255.255.255", PUBLIC),
        ("::", NEVER),
        ("::1", NEVER),
        ("fe80::1", NEVER),
        ("febf::1", NEVER),
        ("ff02::1", NEVER),
        ("fc00::1", PRIVATE),
        ("fd12:3456::1", PRIVATE),
        ("fec0::1", PRIVATE),
        ("2606:4700::1111", PUBLIC),
        # IPv4 hidden in IPv6
        ("::ffff:127.0.0.1", NEVER),
        ("::ffff:7f00:1", NEVER),
        ("::ffff:10.1.2.3", PRIVATE),
        ("::ffff:8.8.8.8", PUBLIC),
        ("64:ff9b::a9fe:a9fe", NEVER),
        ("64:ff9b::10.0.0.1", PRIVATE),
        ("64:ff9b::8.8.8.8", PUBLIC),
        ("2002:7f00:1::", NEVER),
        ("2002:c0a8:101::1", PRIVATE),
        ("2002:808:808::1", PUBLIC),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", NEVER),  # Teredo, inverted 127.0.0.1
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", PRIVATE),  # Teredo, inverted 10.0.0.1
        ("2001:0:4136:e378:8000:63bf:f7f7:f7f7", PUBLIC),  # Teredo, inverted 8.8.8.8
        ("::127.0.0.1", NEVER),
        ("::8.8.8.8", PRIVATE),  # deprecated IPv4-compatible form: never public
        ("fe80::1%eth0", NEVER),
    ],
)
def test_every_range_is_classified_as_the_spec_says(address: str, expected: AddressClass) -> None:
    assert classify_ip(ipaddress.ip_address(address)) is expected


def _embeddings(v4: ipaddress.IPv4Address) -> list[ipaddress.IPv6Address]:
    packed = v4.packed
    inverted = bytes(b ^ 0xFF for b in packed)
    return [
        ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + packed),
        ipaddress.IPv6Address(bytes.fromhex("0064ff9b") + b"\0" * 8 + packed),
        ipaddress.IPv6Address(bytes.fromhex("2002") + packed + b"\0" * 10),
        # Teredo behind the public server 65.54.227.120 (the server's address counts too)
        ipaddress.IPv6Address(bytes.fromhex("200100004136e378") + b"\0" * 4 + inverted),
    ]


@given(st.ip_addresses(v=4))
def test_an_ipv4_address_hidden_in_ipv6_is_classified_as_itself(v4: ipaddress.IPv4Address) -> None:
    for v6 in _embeddings(v4):
        assert classify_ip(v6) is classify_ip(v4)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0X7F.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("10.0.0.1.", "10.0.0.1"),
        ("[::1]", "::1"),
        ("::ffff:127.0.0.1", "::ffff:7f00:1"),
        ("[fe80::1%25eth0]", "fe80::1"),
    ],
)
def test_every_form_the_resolver_accepts_is_read_as_an_address(host: str, expected: str) -> None:
    assert parse_host_literal(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host", ["example.com", "256.0.0.1", "1.2.3.4.5", "08.0.0.1", "0x100.1", "1.16777216", "", "[]"]
)
def test_names_and_out_of_range_numbers_are_no_address(host: str) -> None:
    assert parse_host_literal(host) is None


@pytest.mark.parametrize(
    "host", ["localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.Localhost."]
)
def test_localhost_names_are_local(host: str) -> None:
    assert is_local_host_name(host)


@pytest.mark.parametrize(
    "host", ["localhost.example.com", "notlocalhost", "127.0.0.1", "mylocalhost"]
)
def test_other_names_are_not_local(host: str) -> None:
    assert not is_local_host_name(host)


@pytest.mark.parametrize(
    "host",
    [
        "LOCALHOST",
        "localhost.",
        "127.0.0.2",
        "127.1",
        "0x7f.1",
        "2130706433",
        "[::1]",
        "::ffff:7f00:1",
    ],
)
def test_every_spelling_of_loopback_is_loopback(host: str) -> None:
    """The serving commands' rule: no token needed, DNS-rebinding protection instead."""
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    ["0.0.0.0", "[::]", "10.0.0.1", "::ffff:10.0.0.1", "api.localhost", "127.0.0.1.nip.io", ""],
)
def test_other_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback_host(host)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Read https://example.com/a.", ["https://example.com/a"]),
        ("(see https://example.com/a)", ["https://example.com/a"]),
        ("[the docs](https://example.com/docs) and more", ["https://example.com/docs"]),
        ("[https://a.com/x](https://b.com/y)", ["https://a.com/x", "https://b.com/y"]),
        ("<https://example.com/a>", ["https://example.com/a"]),
        ('"https://example.com/q?x=1", said she', ["https://example.com/q?x=1"]),
        ("'https://example.com/'", ["https://example.com/"]),
        ("**https://example.com/bold**", ["https://example.com/bold"]),
        (
            "https://en.wikipedia.org/wiki/Python_(language)!",
            ["https://en.wikipedia.org/wiki/Python_(language)"],
        ),
        ("http://[2001:DB8::1]:8080/x, next", ["http://[2001:db8::1]:8080/x"]),
        ("plain http://example.com", ["http://example.com/"]),
        ("HTTPS://Example.COM/Path", ["https://example.com/Path"]),
    ],
)
def test_an_address_is_found_as_it_stands(text: str, expected: list[str]) -> None:
    assert find_web_addresses(text) == expected


def test_an_address_with_html_entities_is_also_found_decoded() -> None:
    found = find_web_addresses(
        '<a href="https://example.com/?a=1&amp;b=2">x</a> https&#58;//hidden.example/'
    )
    assert "https://example.com/?a=1&b=2" in found
    assert "https://hidden.example/" in found


@pytest.mark.parametrize(
    "text", [None, "", "example.com/page", "www.example.com", "ftp://example.com/f", "mailto:a@b.c"]
)
def test_text_without_addresses_has_none(text: str | None) -> None:
    assert find_web_addresses(text) == []


def test_each_address_is_listed_once_in_order() -> None:
    text = "https://b.com/ then https://a.com/ then HTTPS://B.COM/#top"
    assert find_web_addresses(text) == ["https://b.com/", "https://a.com/"]


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("https://Example.COM/a", "https://example.com/a"),
        ("HTTPS://example.com/a", "https://example.com/a"),
        ("https://example.com/a#section", "https://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com./a", "https://example.com/a"),
        ("https://münchen.de/a", "https://xn--mnchen-3ya.de/a"),
        ("https://example.com/x/../a", "https://example.com/a"),
        ("https://example.com/./a", "https://example.com/a"),
        ("http://[2001:0db8:0:0::1]/", "http://[2001:db8::1]/"),
        ("https://example.com", "https://example.com/"),
        ("  https://example.com/a  ", "https://example.com/a"),
    ],
)
def test_addresses_asking_for_the_same_count_as_the_same(left: str, right: str) -> None:
    assert request_key(left) is not None
    assert request_key(left) == request_key(right)


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("https://example.com/a", "https://example.com/a?x=1"),
        ("https://example.com/a?x=1", "https://example.com/a?x=2"),
        ("https://example.com/A", "https://example.com/a"),
        ("https://user@example.com/a", "https://example.com/a"),
        ("http://example.com/a", "https://example.com/a"),
        ("https://example.com:8443/a", "https://example.com/a"),
        ("https://example.com:0/a", "https://example.com/a"),
        ("https://www.example.com/a", "https://example.com/a"),
    ],
)
def test_addresses_asking_for_something_else_do_not_count(left: str, right: str) -> None:
    assert request_key(left) != request_key(right)


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "ftp://example.com/",
        "file:///etc/passwd",
        "mailto:a@b.c",
        "/relative",
        "example.com",
        "http://",
        "http://a b.com/",
    ],
)
def test_only_web_addresses_have_a_request_key(url: str | None) -> None:
    assert request_key(url) is None


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://Example.COM./a?x#y", ("https", "example.com", 443)),
        ("HTTP://example.com:80/", ("http", "example.com", 80)),
        ("https://example.com:8443", ("https", "example.com", 8443)),
        ("https://example.com:0/", ("https", "example.com", 0)),
        ("https://bücher.example/", ("https", "xn--bcher-kva.example", 443)),
        ("https://0x7f.1/", ("https", "127.0.0.1", 443)),
        ("https://2130706433/", ("https", "127.0.0.1", 443)),
        ("https://[0:0::1]:8443/", ("https", "[::1]", 8443)),
    ],
)
def test_an_origin_is_scheme_canonical_host_and_effective_port(
    url: str, origin: tuple[str, str, int]
) -> None:
    assert web_origin(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com../",
        "https://exa%2emple.com/",
        "https://0177.0.0.1/",
        "https://[fd00::zz]/",
        "https://exa mple.com/",
        "ftp://example.com/",
        "/relative",
        "",
    ],
)
def test_an_address_the_rules_cannot_read_has_no_origin(url: str) -> None:
    assert web_origin(url) is None


def test_the_default_ports_are_one_table() -> None:
    assert {s: default_port(s) for s in ("http", "HTTPS", "ftp", "ws", "wss", "file", "")} == {
        "http": 80,
        "HTTPS": 443,
        "ftp": 21,
        "ws": 80,
        "wss": 443,
        "file": None,
        "": None,
    }


def test_a_logged_address_keeps_parameter_names_but_not_their_values() -> None:
    logged = redact_url_for_log(
        "https://user:pw@example.com:8443/p/a?token=s3cret&page=2&bare#frag"
    )
    assert logged == "https://example.com:8443/p/a?token=*****&page=*****&*****"
    assert "s3cret" not in logged and "pw" not in logged and "frag" not in logged


def test_a_logged_address_is_at_most_2000_characters() -> None:
    assert len(redact_url_for_log("https://example.com/" + "a" * 5000)) == 2000


def test_an_unreadable_address_is_logged_without_its_text() -> None:
    assert "secret" not in redact_url_for_log("http://[secret/")


def test_allowed_private_hosts_are_split_and_canonical() -> None:
    text = (
        "Wiki.Corp.Example., *.intranet.test;10.0.0.5\n[fd00::1]\r\nmünchen.de,, wiki.corp.example"
    )
    assert parse_allowed_private_hosts(text) == (
        "wiki.corp.example",
        "*.intranet.test",
        "10.0.0.5",
        "fd00::1",
        "xn--mnchen-3ya.de",
    )
    assert parse_allowed_private_hosts("") == ()
    assert parse_allowed_private_hosts(None) == ()


@pytest.mark.parametrize(
    "entry", ["https://wiki.corp", "wiki.corp/path", "wiki.corp?x", "user@wiki.corp"]
)
def test_an_allowed_private_host_with_scheme_or_path_is_refused(entry: str) -> None:
    with pytest.raises(
        ValueError,
        match=r"^Allowed private hosts must be host names only, without scheme or path\.$",
    ):
        parse_allowed_private_hosts(f"ok.corp, {entry}")


@pytest.mark.parametrize(
    "entry", ["wiki.corp:8080", "*.10.0.0.1", "a..b", "*", "*.", "bad host", "exa_mple!.com"]
)
def test_an_allowed_private_host_which_is_no_host_is_refused_by_name(entry: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_allowed_private_hosts(entry)
    assert str(raised.value) == f"Allowed private host '{entry}' is not valid."


def test_a_wildcard_allows_subdomains_only() -> None:
    allowed = parse_allowed_private_hosts("wiki.corp, *.intranet.test, 10.0.0.5, fd00::1")
    assert is_host_allowed("WIKI.corp.", allowed)
    assert is_host_allowed("a.intranet.test", allowed)
    assert is_host_allowed("a.b.intranet.test", allowed)
    assert not is_host_allowed("intranet.test", allowed)
    assert not is_host_allowed("evilintranet.test", allowed)
    assert not is_host_allowed("x.wiki.corp", allowed)
    assert is_host_allowed("10.0.0.5", allowed)
    assert is_host_allowed("[fd00:0::1]", allowed)
    assert not is_host_allowed("10.0.0.6", allowed)


@pytest.mark.parametrize(
    ("address", "embedded", "expected"),
    [
        ("::ffff:127.0.0.1", "127.0.0.1", NEVER),  # RFC 4291 IPv4-mapped
        ("::ffff:0:127.0.0.1", "127.0.0.1", NEVER),  # RFC 2765/6145 IPv4-translated
        ("::ffff:0:169.254.169.254", "169.254.169.254", NEVER),
        ("::ffff:0:10.0.0.1", "10.0.0.1", PRIVATE),
        ("::ffff:0:8.8.8.8", "8.8.8.8", PUBLIC),
        ("::127.0.0.1", "127.0.0.1", NEVER),  # RFC 4291 IPv4-compatible
        ("64:ff9b::169.254.169.254", "169.254.169.254", NEVER),  # RFC 6052 well-known NAT64
        ("64:ff9b:1::127.0.0.1", "127.0.0.1", NEVER),  # RFC 8215 local-use, /96
        ("64:ff9b:1::10.0.0.1", "10.0.0.1", NEVER),  # as /48 it reads 0.0.0.0
        ("64:ff9b:1:7f00:0:100::", "127.0.0.1", NEVER),  # RFC 8215 local-use, /48 (u octet skipped)
        ("64:ff9b:1:a:0:1::", "10.0.0.1", NEVER),  # /56; as /48 it reads 0.10.0.0
        ("64:ff9b:1:0:a:1::", "10.0.1.0", NEVER),  # /64; as /48 it reads 0.0.0.10
        ("2002:7f00:1::", "127.0.0.1", NEVER),  # RFC 3056 6to4
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1", NEVER),  # RFC 4380 Teredo
        ("2001:0:7f00:1:8000:63bf:f7f7:f7f7", "127.0.0.1", NEVER),  # Teredo server, public client
        ("2001:0:a9fe:a9fe:8000:63bf:f7f7:f7f7", "169.254.169.254", NEVER),  # server: metadata
        ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "10.0.0.1", PRIVATE),  # Teredo server 10.0.0.1
        ("2001:0:808:808:8000:63bf:f7f7:f7f7", "8.8.8.8", PUBLIC),  # both public
    ],
)
def test_every_translation_prefix_is_classified_by_the_ipv4_it_embeds(
    address: str, embedded: str, expected: AddressClass
) -> None:
    ip = ipaddress.IPv6Address(address)
    assert ipaddress.IPv4Address(embedded) in embedded_ipv4s(ip)
    assert classify_ip(ip) is expected


def test_the_translation_table_names_an_rfc_per_row() -> None:
    assert all("RFC" in rfc for _network, rfc, _extract in TRANSLATION_PREFIXES)
