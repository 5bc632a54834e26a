"""search_confluence stays inside its base URL, and no query text can leave its CQL string.

Confluence Data Center runs on Tomcat, which reads `..;x` (a `..` segment with a path parameter)
as `..`: `/wiki/..;/admin` is `/admin` to the server, so it must be outside `/wiki/` here too.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from runtime.tools.search_confluence import is_login_page, search_cql, search_url, within_wiki
from runtime.web.retrieval import WebPageAccessBlocked, WebPageAccessBlockReason, retrieve
from tests.security._kit import options
from tests.security._raw_server import answer, raw_server, redirect

BASE = "https://wiki.example.org/wiki/"


@pytest.mark.parametrize(
    "url",
    [
        "https://wiki.example.org/wiki/..;/admin/",
        "https://wiki.example.org/wiki/..;jsessionid=1/admin/",
        "https://wiki.example.org/wiki/%2e%2e;/admin/",
        "https://wiki.example.org/wiki/.%2E;x/admin/",
        "https://wiki.example.org/wiki/..%3B/admin/",
        "https://wiki.example.org/wiki/../admin/",
        "https://wiki.example.org/wiki/%2e%2e/admin/",
        "https://wiki.example.org/wiki/%2E%2E%2Fadmin/",
        "https://wiki.example.org/wiki\\..\\admin/",
        "https://wiki.example.org/wiki%5C..%5Cadmin/",
        "https://wiki.example.org.evil.test/wiki/",
        "https://wiki.example.org@evil.test/wiki/",
        "https://evil.test/wiki/?https://wiki.example.org/wiki/",
        "https://wiki.example.org/wiki-evil/",
        "https://wiki.example.org/WIKI/",
        "http://wiki.example.org/wiki/",
        "https://wiki.example.org:8443/wiki/",
    ],
)
def test_addresses_outside_the_wiki(url: str) -> None:
    assert not within_wiki(url, BASE)


@pytest.mark.parametrize(
    "url",
    [
        "https://wiki.example.org/wiki/dosearchsite.action?cql=x",
        "https://WIKI.example.org./wiki/display/SP/Page",
        "https://wiki.example.org:443/wiki/display/SP/Page;jsessionid=abc",
        "https://wiki.example.org/wiki/display/SP/Release..notes",
    ],
)
def test_addresses_inside_the_wiki(url: str) -> None:
    assert within_wiki(url, BASE)


async def test_a_redirect_up_through_a_path_parameter_is_never_followed() -> None:
    routes = {
        "/wiki/dosearchsite.action": redirect("/wiki/..;/admin/"),
        "/wiki/..;/admin/": answer(b"<p>admin console</p>"),
    }
    async with raw_server(routes) as server:
        base = f"http://wiki.corp.test:{server.port}/wiki/"
        opts = options(is_target_allowed=lambda hop: within_wiki(hop, base))
        with pytest.raises(WebPageAccessBlocked) as caught:
            await retrieve(f"{base}dosearchsite.action", opts)
    assert caught.value.reason is WebPageAccessBlockReason.TARGET_NOT_ALLOWED
    assert server.paths == ["/wiki/dosearchsite.action"]


@pytest.mark.parametrize(
    ("query", "space"),
    [
        ('x" or space="HR', None),
        ('x\\" or title ~ "y', None),
        ("x&os_destination=/admin#top", None),
        ("report", 'DEV" or space="HR'),
        ("%26cql%3Dtype%3Dpage", "A&B=C"),
    ],
)
def test_query_text_stays_inside_its_cql_string_and_parameter(
    query: str, space: str | None
) -> None:
    url = search_url(BASE, query, space)
    parts = urlsplit(url)
    parameters = parse_qs(parts.query, keep_blank_values=True)
    assert set(parameters) == {"cql", "queryString"} and not parts.fragment
    assert parameters["cql"] == [search_cql(query, space)]
    assert parameters["queryString"] == [query]
    assert not is_login_page(url)
    cql = parameters["cql"][0]
    # Outside the escaped string literals only the fixed CQL words remain.
    outside = _outside_strings(cql)
    assert outside in ("siteSearch ~ ", "siteSearch ~  and space=")


def _outside_strings(cql: str) -> str:
    kept: list[str] = []
    inside = escaped = False
    for ch in cql:
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        else:
            kept.append(ch)
    assert not inside
    return "".join(kept)
