"""`read_web_page.allowedPrivateHosts`: one table of entries and hosts against the one parser.

Each row is an entry, what it reads as (or None: refused) and hosts it must and must not let
through. The same row is asked of the parser (`parse_allowed_private_hosts`), of the policy's
field rule (what `policy check`, `settings set` and the registry ask) and of the runtime's
matching (`is_host_allowed`, which the retrieval's address check asks), so an entry the policy
accepts is an entry the runtime honours, and an entry the policy refuses never reaches it.
"""

from __future__ import annotations

import pytest

from policy.builtin import READ_WEB_PAGE, ReadWebPageTool
from policy.hosts import is_host_allowed, parse_allowed_private_hosts
from policy.resolve import field_problem
from runtime.web import addresses

ROWS: list[tuple[str, tuple[str, ...] | None, tuple[str, ...], tuple[str, ...]]] = [
    # entry, canonical entries (None: refused), hosts let through, hosts kept out
    ("wiki.corp", ("wiki.corp",), ("wiki.corp", "WIKI.Corp.", "wiki.corp."), ("x.wiki.corp", "wiki.corp..")),
    ("Wiki.Corp.", ("wiki.corp",), ("wiki.corp",), ("wiki.corp.evil",)),
    # IDN: the Unicode and punycode spellings are one entry, either way round
    ("bücher.example", ("xn--bcher-kva.example",), ("bücher.example", "xn--bcher-kva.example"), ("bucher.example",)),
    ("xn--bcher-kva.example", ("xn--bcher-kva.example",), ("BÜCHER.example",), ()),
    ("*.bücher.example", ("*.xn--bcher-kva.example",), ("a.xn--bcher-kva.example", "a.bücher.example"), ("bücher.example",)),
    # underscores (internal DNS, Windows host names)
    ("a_b.corp", ("a_b.corp",), ("a_b.corp", "A_B.corp"), ("ab.corp", "a-b.corp")),
    ("_ldap.corp", ("_ldap.corp",), ("_ldap.corp",), ()),
    # wildcards: subdomains only, never the name itself, never over an IP literal
    ("*.intra.test", ("*.intra.test",), ("a.intra.test", "a.b.intra.test"), ("intra.test", "evilintra.test")),
    ("*.10.0.0.1", None, (), ()),
    ("*.[fd00::1]", None, (), ()),
    ("*.127.1", None, (), ()),
    ("*", None, (), ()),
    ("*.", None, (), ()),
    ("a.*.corp", None, (), ()),
    # IP literals, compared canonically (every form the system resolver reads)
    ("10.0.0.5", ("10.0.0.5",), ("10.0.0.5", "0x0a.0.0.5", "012.0.0.5", "167772165"), ("10.0.0.6",)),
    ("10.1", ("10.0.0.1",), ("10.0.0.1",), ("10.1.0.0",)),
    # IPv6, bare or bracketed, compressed or not
    ("fd00::1", ("fd00::1",), ("[fd00::1]", "[FD00:0:0::1]", "fd00:0000::0001"), ("fd00::2",)),
    ("[fd00::1]", ("fd00::1",), ("fd00::1",), ()),
    ("[fd00::1]:8080", None, (), ()),
    ("fd00::zz", None, (), ()),
    # ports, schemes, paths, user info: hosts only
    ("wiki.corp:8080", None, (), ()),
    ("10.0.0.5:80", None, (), ()),
    ("https://wiki.corp", None, (), ()),
    ("wiki.corp/path", None, (), ()),
    ("user@wiki.corp", None, (), ()),
    ("wiki.corp?x=1", None, (), ()),
    # not a host at all
    ("a..b", None, (), ()),
    ("bad host", None, (), ()),
    ("exa_mple!.com", None, (), ()),
    ("-lead.corp", None, (), ()),
    # several entries, any separator, each once
    ("wiki.corp; *.intra.test\n10.0.0.5,, wiki.corp", ("wiki.corp", "*.intra.test", "10.0.0.5"), ("a.intra.test",), ("intra.test",)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "canonical", "allowed", "kept_out"), ROWS, ids=[r[0] for r in ROWS]
)
def test_one_table_against_the_one_parser(
    entry: str,
    canonical: tuple[str, ...] | None,
    allowed: tuple[str, ...],
    kept_out: tuple[str, ...],
) -> None:
    tool = ReadWebPageTool()
    problem = field_problem(tool.definition, "allowedPrivateHosts", entry, tool)
    if canonical is None:
        with pytest.raises(ValueError):
            parse_allowed_private_hosts(entry)
        assert problem is not None and problem.startswith(f"{READ_WEB_PAGE}.allowedPrivateHosts: ")
        return
    assert problem is None
    entries = parse_allowed_private_hosts(entry)
    assert entries == canonical
    for host in allowed:
        assert is_host_allowed(host, entries), host
    for host in kept_out:
        assert not is_host_allowed(host, entries), host


def test_the_runtime_asks_the_same_functions() -> None:
    assert addresses.parse_allowed_private_hosts is parse_allowed_private_hosts
    assert addresses.is_host_allowed is is_host_allowed
