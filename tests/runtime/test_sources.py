"""Sources: one entry per address while collected, grouped and numbered when shown."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.messages import Source, SourceOrigin
from runtime.sources import (
    group_sources,
    merge_sources,
    render_sources_export,
    render_sources_markdown,
    source_key,
)

LLM, TOOL, RAG = SourceOrigin.LLM, SourceOrigin.TOOL, SourceOrigin.RAG


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://example.com/a", "HTTPS://EXAMPLE.COM/a"),
        ("https://example.com/a", "https://example.com:443/a"),
        ("https://example.com/a", "https://example.com./a"),
        ("https://example.com/a", "https://example.com/a#section"),
        ("https://example.com/a", "  https://example.com/a\r\n"),
        ("https://bücher.de/x", "https://xn--bcher-kva.de/x"),
        ("https://127.0.0.1/a", "https://2130706433/a"),
        ("https://[::1]/a", "https://[0:0::1]/a"),
        ("ftp://example.com/a", "ftp://example.com:21/a"),
        ("wss://example.com/a", "wss://example.com:443/a"),
        ("ws://example.com/a", "ws://example.com:80/a"),
        ("https://example.com/a b", "https://example.com/a%20b"),
        ("notes/a.md", " notes/a.md "),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?q=1", "https://example.com/?q=1"),
    ],
)
def test_spellings_of_one_address_are_one_source(first: str, second: str) -> None:
    assert source_key(first) == source_key(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://example.com/a", "https://example.com/A"),
        ("https://example.com/a?x=1", "https://example.com/a?x=2"),
        ("https://example.com/a", "http://example.com/a"),
        ("https://example.com/a", "https://example.com:8443/a"),
        ("ftp://example.com/a", "ftp://example.com:80/a"),
        ("https://127.0.0.1/a", "https://127.0.0.2/a"),
        ("file:///docs/a.pdf#page=1", "file:///docs/a.pdf#page=2"),
    ],
)
def test_different_requests_stay_different_sources(first: str, second: str) -> None:
    assert source_key(first) != source_key(second)


def test_a_file_link_drops_an_anchor_which_is_no_page() -> None:
    assert source_key("file:///docs/a.pdf#intro") == source_key("file:///docs/a.pdf")


def test_merging_keeps_the_first_entry_and_the_order() -> None:
    existing = [Source("First", "https://example.com/a", LLM)]
    new = [
        Source("Again", "https://EXAMPLE.com/a#x", TOOL),
        Source("Second", "https://example.com/b", TOOL),
        Source("Second again", "https://example.com/b", TOOL),
    ]
    merged = merge_sources(existing, new)
    assert [s.title for s in merged] == ["First", "Second"]
    assert existing == [Source("First", "https://example.com/a", LLM)]


def test_the_groups_keep_their_order_and_the_numbers_run_through() -> None:
    sources = [
        Source("Passage", "file:///a.pdf", RAG),
        Source("Page", "https://example.com/p", TOOL),
        Source("Cited", "https://example.com/c", LLM),
        Source("Other page", "https://example.com/q", TOOL),
    ]
    assert render_sources_markdown(sources) == (
        "## Sources provided by the AI\n"
        "- [1] [Cited](https://example.com/c)\n"
        "\n"
        "## Sources used by tools\n"
        "- [2] [Page](https://example.com/p)\n"
        "- [3] [Other page](https://example.com/q)\n"
        "\n"
        "## Sources provided by the data providers\n"
        "- [4] [Passage](file:///a.pdf)"
    )


def test_an_origin_without_sources_is_no_group() -> None:
    groups = group_sources([Source("Page", "https://example.com/p", TOOL)])
    assert [(g.origin, g.heading) for g in groups] == [(TOOL, "Sources used by tools")]
    assert groups[0].numbered[0][0] == 1


def test_a_title_cannot_break_out_of_its_link() -> None:
    line = render_sources_markdown([Source("a]](javascript:x) [b\\\nc", "https://e.com", TOOL)])
    assert line.endswith("- [1] [a\\]\\](javascript:x) \\[b\\\\ c](https://e.com)")


def test_an_address_cannot_close_its_link_early() -> None:
    line = render_sources_markdown([Source("t", "https://e.com/a b)(x", TOOL)])
    assert line.endswith("[t](https://e.com/a%20b%29%28x)")


def test_a_local_path_keeps_working_as_a_link() -> None:
    line = render_sources_markdown([Source("Report", "C:\\My Docs\\report 1.pdf", RAG)])
    assert line.endswith("[Report](C:\\My%20Docs\\report%201.pdf)")


def test_a_wrapped_markdown_link_is_unwrapped() -> None:
    line = render_sources_markdown([Source("t", "[label](https://e.com/x)", TOOL)])
    assert line.endswith("[t](https://e.com/x)")


def test_no_sources_mean_no_text() -> None:
    assert render_sources_markdown([]) == ""
    assert render_sources_export([]) == ""


def test_the_export_puts_one_heading_of_its_own_above_the_groups() -> None:
    sources = [Source("Doc", "file:///docs/a.pdf#page=3", RAG)]
    exported = render_sources_export(sources)
    assert exported == (
        "# Sources\n\n## Sources provided by the data providers\n- [1] [Doc](file:///docs/a.pdf)"
    )
    assert render_sources_markdown(sources).endswith("(file:///docs/a.pdf#page=3)")


def test_a_web_source_keeps_its_anchor_in_the_export() -> None:
    exported = render_sources_export([Source("Doc", "https://e.com/a#part", TOOL)])
    assert exported.endswith("(https://e.com/a#part)")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.text(max_size=40))
def test_any_address_and_title_render_without_an_error(url: str, title: str) -> None:
    key = source_key(url)
    assert "\n" not in key and "\r" not in key
    line = render_sources_markdown([Source(title, url, TOOL)])
    assert line.startswith("## Sources used by tools\n- [1] [")
    assert line.count("\n") == 1
