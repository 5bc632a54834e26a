"""The documentation site builds with warnings as errors, and every internal link in it resolves.

`sphinx-build -W` already fails on a link MyST cannot resolve; the check over the built HTML also
covers what the theme and the included files (CHANGELOG.md, bench/README.md, README.md) put
there: every relative `href`/`src` names a file of the site, and every `#fragment` an id on the
page it points to. External addresses are not visited (the build and the check need no network).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import lxml.html
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _build(source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(source),
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def broken_links(site: Path) -> list[str]:
    """Each relative link of the built site that names no file, or no id on its page."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            tree = lxml.html.parse(str(page))
            ids[page] = {str(v) for v in tree.xpath("//@id | //a/@name")}
        return ids[page]

    problems = []
    for page in sorted(site.rglob("*.html")):
        for element, attribute, link, _ in lxml.html.parse(str(page)).getroot().iterlinks():
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or attribute not in ("href", "src"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            where = f"{page.relative_to(site)}: <{element.tag} {attribute}={link!r}>"
            if not target.is_file():
                problems.append(f"{where}: no file {target}")
            elif (
                parts.fragment
                and target.suffix == ".html"
                and unquote(parts.fragment) not in ids_of(target)
            ):
                problems.append(f"{where}: no id {parts.fragment!r} on that page")
    return problems


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = _build(DOCS, out)
    assert done.returncode == 0, f"the site does not build:\n{done.stdout}\n{done.stderr}"
    return out


def test_the_site_builds_with_its_pages(site: Path) -> None:
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    assert {
        "index.html",
        "administrators/plugin-lua.html",
        "architecture.html",
        "quickstart.html",
        "benchmarks.html",
        "changelog.html",
    } <= pages
    reference = lxml.html.parse(str(site / "administrators/plugin-lua.html")).getroot()
    assert "DataTools.RequireApprovalToolIds" in reference.text_content()
    assert "RequirePins" in reference.text_content()
    changelog = lxml.html.parse(str(site / "changelog.html")).getroot().text_content()
    assert "Changelog" in changelog and "Unreleased" in changelog
    plugins = lxml.html.parse(str(site / "administrators/writing-plugins.html")).getroot()
    assert "Failing closed" in plugins.text_content()
    servers = lxml.html.parse(str(site / "administrators/mcp-servers.html")).getroot()
    assert "policy mcp pin" in servers.text_content()


def test_a_long_name_in_a_table_may_break_and_reads_whole(site: Path) -> None:
    """The settings table fits the page's column: a key breaks after its dot and between its
    camel-case words (`<wbr>`), never elsewhere, and reads (and copies) as written; a short name
    (`SELF_HOSTED`) stays whole, and prose outside tables gets no break opportunities."""
    reference = lxml.html.parse(str(site / "administrators/plugin-lua.html")).getroot()
    key = next(
        code
        for code in reference.iterfind(".//table//code")
        if code.text_content() == "DataTools.MinimumProviderConfidenceByToolId"
    )
    pieces = [(span.text or "") for span in key.iter("span")]
    assert pieces == ["Data", "Tools.", "Minimum", "Provider", "Confidence", "By", "Tool", "Id"]
    assert len(list(key.iter("wbr"))) == len(pieces) - 1
    short = [c for c in reference.iterfind(".//table//code") if c.text_content() == "SELF_HOSTED"]
    assert short and not any(list(c.iter("wbr")) for c in short)
    for page in sorted(site.rglob("*.html")):
        for wbr in lxml.html.parse(str(page)).getroot().iter("wbr"):
            assert any(a.tag == "table" for a in wbr.iterancestors()), page


def test_every_internal_link_of_the_site_resolves(site: Path) -> None:
    assert broken_links(site) == []


def test_a_link_to_a_missing_heading_fails_the_build(tmp_path: Path) -> None:
    source = tmp_path / "docs"
    source.mkdir()
    (source / "conf.py").write_text((DOCS / "conf.py").read_text(encoding="utf-8"))
    (source / "index.md").write_text(
        "# Home\n\n## Here\n\nSee [there](#not-a-heading-here).\n", encoding="utf-8"
    )
    done = _build(source, tmp_path / "out")
    assert done.returncode != 0
    assert "index.md:5" in done.stderr and "not-a-heading-here" in done.stderr


def test_the_link_check_names_a_missing_page_and_a_missing_id(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_text(
        '<html><body><h1 id="top">A</h1><a href="b.html#nowhere">b</a>'
        '<a href="gone.html">gone</a><a href="#top">top</a>'
        '<a href="https://example.org/x.html">out</a></body></html>',
        encoding="utf-8",
    )
    (tmp_path / "b.html").write_text('<html><body><p id="here">B</p></body></html>')
    assert broken_links(tmp_path) == [
        "a.html: <a href='b.html#nowhere'>: no id 'nowhere' on that page",
        f"a.html: <a href='gone.html'>: no file {tmp_path / 'gone.html'}",
    ]
