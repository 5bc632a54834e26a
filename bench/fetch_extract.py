"""Benchmark: reading a page our way vs. the plain way, and memory for oversized pages. Prints figures.

    .venv/bin/python bench/fetch_extract.py [--rounds 7] [--pages 24]

1. Time per page, served from a loopback server: our retrieve (target policy, bound connection,
   capped body) + extract_page + truncate + sanitize, against plain `httpx.get` +
   `trafilatura.extract` in the same run, interleaved page by page (target: ours ≤ 1.3× plain).
   Both open a new connection per page and share one SSL context, so neither pays for CA loading.
2. Peak traced memory (tracemalloc) while our retrieval refuses a 50 MiB page (streamed and
   declared), a gzip bomb inflating to 64 MiB, and, for contrast, plain `httpx.get` of 50 MiB.

This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import httpx
import trafilatura

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.web._transport import default_ssl_context  # noqa: E402
from runtime.web.addresses import AddressClass, IPAddress  # noqa: E402
from runtime.web.extract import extract_page  # noqa: E402
from runtime.web.guard import PromptInjectionGuard  # noqa: E402
from runtime.web.injection_filter import StructuralInjectionFilter  # noqa: E402
from runtime.web.retrieval import RetrievalOptions, WebRetrievalError, retrieve  # noqa: E402
from runtime.web.sanitize import WebPageModelContent, sanitize_page  # noqa: E402
from runtime.web.truncate import truncate_markdown  # noqa: E402
from tests.servers.page_server import MIB, PageServer, running_page_server  # noqa: E402

_WORDS = [
    "the",
    "report",
    "shows",
    "that",
    "revenue",
    "growth",
    "in",
    "the",
    "region",
    "was",
    "driven",
    "by",
    "demand",
    "for",
    "services",
    "while",
    "costs",
    "stayed",
    "flat",
    "and",
    "the",
    "team",
    "expects",
    "further",
    "improvement",
    "next",
    "quarter",
    "as",
    "new",
    "customers",
    "join",
    "the",
    "platform",
    "and",
    "existing",
    "contracts",
    "renew",
    "at",
    "higher",
    "volumes",
    "with",
    "support",
    "from",
    "partners",
    "across",
    "logistics",
    "manufacturing",
    "retail",
    "and",
    "public",
    "sector",
    "institutions",
]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(8, 24))]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(2, 7)))


def _page(index: int, rng: random.Random) -> bytes:
    """A page shaped like the web: head metadata, scripts, navigation, article, sidebar, footer."""
    paragraphs = rng.randint(6, 80)
    script_kib = rng.choice((4, 20, 60, 150))
    title = f"Article {index}: {_sentence(rng)[:60]}"
    nav = "".join(
        f'<li><a href="/section/{n}">Section {n}</a></li>' for n in range(rng.randint(20, 80))
    )
    body = []
    for number in range(paragraphs):
        if number % 9 == 4:
            body.append(f"<h2>{_sentence(rng)[:50]}</h2>")
        if number % 13 == 7:
            rows = "".join(
                f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 999)}</td></tr>"
                for _ in range(8)
            )
            body.append(f"<table><tr><th>Item</th><th>Value</th></tr>{rows}</table>")
        if number % 17 == 3:
            body.append(f'<p style="display:none">{_sentence(rng)}</p>')
        body.append(f'<p>{_paragraph(rng)} <a href="/related/{number}">related</a></p>')
    sidebar = "".join(
        f'<li><a href="/popular/{n}">{_sentence(rng)[:40]}</a></li>' for n in range(15)
    )
    script = "var data = " + repr([rng.random() for _ in range(script_kib * 40)]) + ";"
    html = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<meta name="description" content="{_sentence(rng)}">
<meta property="og:title" content="{title}"><meta name="author" content="Jane Doe">
<script type="application/ld+json">{{"@context":"https://schema.org","@type":"NewsArticle",
"headline":"{title}","datePublished":"2025-03-0{index % 9 + 1}T08:00:00Z"}}</script>
<style>.sr-only{{position:absolute}} body{{font-family:sans-serif}}</style>
<script>{script}</script></head><body>
<header><nav><ul>{nav}</ul></nav></header>
<div class="cookie-banner">We use cookies. <button>Accept</button></div>
<main><article><h1>{title}</h1>{"".join(body)}</article></main>
<aside><h3>Popular</h3><ul>{sidebar}</ul></aside>
<footer><p>© 2025 Example Media</p>{nav}</footer>
<script>console.log("tracking")</script></body></html>"""
    return html.encode()


def page_set(count: int) -> dict[str, bytes]:
    rng = random.Random(20250301)
    return {f"p{index}.html": _page(index, rng) for index in range(count)}


Stages = dict[str, float]


async def _ours(url: str, options: RetrievalOptions, guard: PromptInjectionGuard) -> Stages:
    start = time.perf_counter()
    page = await retrieve(url, options)
    fetched = time.perf_counter()
    extracted = extract_page(page.body_text, page.final_url)
    markdown = truncate_markdown(extracted.markdown, 30000)
    cut = time.perf_counter()
    content = WebPageModelContent.from_page(extracted, markdown)
    await sanitize_page(guard, content, page.final_url)
    done = time.perf_counter()
    return {"fetch": fetched - start, "extract": cut - fetched, "sanitize": done - cut}


async def _plain(url: str) -> Stages:
    start = time.perf_counter()
    response = httpx.get(url, verify=default_ssl_context())
    fetched = time.perf_counter()
    trafilatura.extract(
        response.text, url=url, output_format="markdown", include_links=True, include_tables=True
    )
    done = time.perf_counter()
    return {"fetch": fetched - start, "extract": done - fetched, "sanitize": 0.0}


def _median_stages(runs: list[Stages]) -> Stages:
    """The run with the median total, so its stages add up."""
    ordered = sorted(runs, key=lambda run: sum(run.values()))
    return ordered[len(ordered) // 2]


def _bench_options() -> RetrievalOptions:
    async def resolve(host: str) -> Sequence[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    # The loopback server stands in for a public site; everything else runs as for a model URL.
    return RetrievalOptions(
        timeout_seconds=60, resolver=resolve, classify_address=lambda ip: AddressClass.PUBLIC
    )


async def time_pipelines(server: PageServer, names: list[str], rounds: int) -> None:
    options = _bench_options()
    guard = PromptInjectionGuard(StructuralInjectionFilter())
    ours_per_page: list[Stages] = []
    plain_per_page: list[Stages] = []
    for name in names[:2]:
        await _ours(server.url(f"/site/{name}", "bench.test"), options, guard)
        await _plain(server.url(f"/site/{name}"))
    for name in names:
        ours: list[Stages] = []
        plain: list[Stages] = []
        for _ in range(rounds):
            ours.append(await _ours(server.url(f"/site/{name}", "bench.test"), options, guard))
            plain.append(await _plain(server.url(f"/site/{name}")))
        ours_per_page.append(_median_stages(ours))
        plain_per_page.append(_median_stages(plain))
    sizes = [len(server.state.site[name]) for name in names]
    print(
        f"pages: {len(names)}, {min(sizes) // 1024}-{max(sizes) // 1024} KiB, {rounds} rounds each"
    )
    print("  median ms/page       total   fetch  extract  sanitize")
    for label, per_page in (("ours", ours_per_page), ("plain", plain_per_page)):
        totals = [sum(stages.values()) * 1000 for stages in per_page]
        stage_ms = [
            statistics.median(stages[key] for stages in per_page) * 1000
            for key in ("fetch", "extract", "sanitize")
        ]
        print(
            f"  {label:<18} {statistics.median(totals):7.2f} "
            + " ".join(f"{v:7.2f}" for v in stage_ms)
        )
    ours_totals = [sum(stages.values()) for stages in ours_per_page]
    plain_totals = [sum(stages.values()) for stages in plain_per_page]
    ratio = statistics.median(ours_totals) / statistics.median(plain_totals)
    print(f"  ratio ours/plain (median page): {ratio:.2f}x   (target <= 1.3x)")
    print(f"  ratio ours/plain (all pages):   {sum(ours_totals) / sum(plain_totals):.2f}x")
    without_filter = sum(s["fetch"] + s["extract"] for s in ours_per_page) / sum(plain_totals)
    print(f"  ratio without the injection filter (all pages): {without_filter:.2f}x")


async def _peak(run: Callable[[], Awaitable[object]]) -> tuple[float, str]:
    tracemalloc.start()
    tracemalloc.reset_peak()
    outcome = "read"
    try:
        await run()
    except WebRetrievalError as error:
        outcome = f"refused: {error}"
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / MIB, outcome


async def measure_memory(server: PageServer) -> None:
    options = _bench_options()
    size = 50 * MIB
    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        (
            "ours, 50 MiB streamed",
            lambda: retrieve(server.url(f"/big?size={size}", "bench.test"), options),
        ),
        (
            "ours, 50 MiB declared",
            lambda: retrieve(server.url(f"/big?size={size}&length=1", "bench.test"), options),
        ),
        (
            "ours, gzip bomb 64 MiB",
            lambda: retrieve(server.url("/gzip-bomb", "bench.test"), options),
        ),
        (
            "plain httpx.get, 50 MiB",
            lambda: asyncio.to_thread(httpx.get, server.url(f"/big?size={size}"), timeout=60),
        ),
    ]
    print("peak traced memory (cap 5 MiB):")
    for label, run in cases:
        peak, outcome = await _peak(run)
        print(f"  {label:<26} {peak:7.1f} MiB   {outcome[:70]}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pages", type=int, default=24)
    arguments = parser.parse_args()
    site = page_set(arguments.pages)
    with running_page_server(site=site) as server:
        await time_pipelines(server, sorted(site), arguments.rounds)
        await measure_memory(server)


if __name__ == "__main__":
    asyncio.run(main())
