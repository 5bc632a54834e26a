"""Benchmark: reading a page our way vs. the plain way, and memory for oversized pages. Prints figures.

    .venv/bin/python bench/fetch_extract.py [--rounds 7] [--pages 24]

The page server runs in its own process (started by this script, stopped at its end), so its
work never competes with the measured side for this process's GIL.

1. Time per page: our retrieve (target policy, bound connection, capped body) + extract_page +
   truncate + sanitize, against plain `httpx.get` + `trafilatura.extract` with the same
   extraction options (`runtime.web.extract.TRAFILATURA_OPTIONS`), interleaved page by page
   (target: ours <= 1.3x plain). Both open a new connection per page and share one SSL context,
   so neither pays for CA loading. The figure without the injection filter is ours minus the
   sanitize stage. Then Python function calls per page on each side, which load does not move.
2. Peak whole-process RSS (`resource.getrusage(RUSAGE_SELF).ru_maxrss`) of a fresh process per
   case: our retrieval refusing a 50 MiB page (streamed and declared) and a gzip bomb inflating to
   64 MiB, and plain `httpx.get` of the 50 MiB page; each next to the same process's peak after
   set-up (imports, event loop, client), and the difference.

This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import trafilatura

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.web._transport import default_ssl_context  # noqa: E402
from runtime.web.addresses import AddressClass, IPAddress  # noqa: E402
from runtime.web.extract import TRAFILATURA_OPTIONS, extract_page  # noqa: E402
from runtime.web.guard import PromptInjectionGuard  # noqa: E402
from runtime.web.injection_filter import StructuralInjectionFilter  # noqa: E402
from runtime.web.retrieval import RetrievalOptions, WebRetrievalError, retrieve  # noqa: E402
from runtime.web.sanitize import WebPageModelContent, sanitize_page  # noqa: E402
from runtime.web.truncate import truncate_markdown  # noqa: E402
from tests.servers.page_server import MIB, running_page_server  # noqa: E402

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
    start, cpu = time.perf_counter(), time.process_time()
    page = await retrieve(url, options)
    fetched = time.perf_counter()
    extracted = extract_page(page.body_text, page.final_url)
    markdown = truncate_markdown(extracted.markdown, 30000)
    cut = time.perf_counter()
    content = WebPageModelContent.from_page(extracted, markdown)
    await sanitize_page(guard, content, page.final_url)
    done = time.perf_counter()
    return {
        "fetch": fetched - start,
        "extract": cut - fetched,
        "sanitize": done - cut,
        "cpu": time.process_time() - cpu,
    }


async def _plain(url: str) -> Stages:
    start, cpu = time.perf_counter(), time.process_time()
    response = httpx.get(url, verify=default_ssl_context())
    fetched = time.perf_counter()
    trafilatura.extract(response.text, **TRAFILATURA_OPTIONS)
    done = time.perf_counter()
    return {
        "fetch": fetched - start,
        "extract": done - fetched,
        "sanitize": 0.0,
        "cpu": time.process_time() - cpu,
    }


_WALL = ("fetch", "extract", "sanitize")


def _wall(stages: Stages) -> float:
    return sum(stages[key] for key in _WALL)


def _median_stages(runs: list[Stages]) -> Stages:
    """The run with the median wall time, so its stages add up."""
    ordered = sorted(runs, key=_wall)
    return ordered[len(ordered) // 2]


def _bench_options() -> RetrievalOptions:
    async def resolve(host: str) -> Sequence[IPAddress]:
        return [ipaddress.ip_address("127.0.0.1")]

    # The loopback server stands in for a public site; everything else runs as for a model URL.
    return RetrievalOptions(
        timeout_seconds=60, resolver=resolve, classify_address=lambda ip: AddressClass.PUBLIC
    )


@dataclass(frozen=True)
class ServerProcess:
    """The page server, running in a child process."""

    port: int

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"


@contextmanager
def server_process(pages: int) -> Iterator[ServerProcess]:
    """Start `--serve PAGES` in a child process; it stops when its stdin closes."""
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(pages)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError("the page server process did not start")
        yield ServerProcess(int(line))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def serve(pages: int) -> None:
    """The child's side: serve the page set and the oversized pages until stdin closes."""
    with running_page_server(site=page_set(pages)) as server:
        print(server.port, flush=True)
        sys.stdin.read()


async def time_pipelines(server: ServerProcess, site: dict[str, bytes], rounds: int) -> None:
    names = sorted(site)
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
    sizes = [len(site[name]) for name in names]
    print(
        f"pages: {len(names)}, {min(sizes) // 1024}-{max(sizes) // 1024} KiB, {rounds} rounds "
        "each; page server in its own process; trafilatura options on both sides: "
        + ", ".join(f"{k}={v}" for k, v in TRAFILATURA_OPTIONS.items())
    )
    print("  median ms/page       wall    fetch  extract  sanitize    CPU")
    for label, per_page in (("ours", ours_per_page), ("plain", plain_per_page)):
        stage_ms = [
            statistics.median(stages[key] for stages in per_page) * 1000 for key in (*_WALL, "cpu")
        ]
        print(
            f"  {label:<18} {statistics.median(_wall(s) for s in per_page) * 1000:7.2f} "
            + " ".join(f"{v:7.2f}" for v in stage_ms)
        )
    ours_wall = [_wall(stages) for stages in ours_per_page]
    plain_wall = [_wall(stages) for stages in plain_per_page]
    ratio = statistics.median(ours_wall) / statistics.median(plain_wall)
    print(f"  ratio ours/plain, wall time (median page): {ratio:.2f}x   (target <= 1.3x)")
    print(f"  ratio ours/plain, wall time (all pages):   {sum(ours_wall) / sum(plain_wall):.2f}x")
    ours_cpu = sum(stages["cpu"] for stages in ours_per_page)
    plain_cpu = sum(stages["cpu"] for stages in plain_per_page)
    print(f"  ratio ours/plain, CPU time of this process (all pages): {ours_cpu / plain_cpu:.2f}x")
    without_filter = sum(s["fetch"] + s["extract"] for s in ours_per_page) / sum(plain_wall)
    print(f"  ratio without the injection filter, wall time (all pages): {without_filter:.2f}x")


async def count_calls(server: ServerProcess, site: dict[str, bytes]) -> None:
    """Python function calls per page (cProfile's count, C functions included): the same on a
    busy machine as on an idle one, unlike the times above."""
    import cProfile
    import pstats

    names = sorted(site)
    options = _bench_options()
    guard = PromptInjectionGuard(StructuralInjectionFilter())
    sides: dict[str, Callable[[str], Awaitable[Stages]]] = {
        "ours": lambda name: _ours(server.url(f"/site/{name}", "bench.test"), options, guard),
        "plain": lambda name: _plain(server.url(f"/site/{name}")),
    }
    calls: dict[str, int] = {}
    for side, run in sides.items():
        profile = cProfile.Profile()
        for name in names:
            profile.enable()
            await run(name)
            profile.disable()
        stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        calls[side] = sum(entry[1] for entry in stats.values())
    ours, plain = (calls[side] / len(names) for side in ("ours", "plain"))
    print(
        f"  Python calls per page: ours {ours:,.0f}, plain {plain:,.0f}, "
        f"ratio {ours / plain:.2f}x (independent of load)"
    )


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _memory_cases(server: ServerProcess) -> dict[str, Callable[[], Awaitable[object]]]:
    options = _bench_options()
    size = 50 * MIB
    return {
        "ours, 50 MiB streamed": lambda: retrieve(
            server.url(f"/big?size={size}", "bench.test"), options
        ),
        "ours, 50 MiB declared": lambda: retrieve(
            server.url(f"/big?size={size}&length=1", "bench.test"), options
        ),
        "ours, gzip bomb 64 MiB": lambda: retrieve(server.url("/gzip-bomb", "bench.test"), options),
        "plain httpx.get, 50 MiB": lambda: asyncio.to_thread(
            httpx.get, server.url(f"/big?size={size}"), timeout=60
        ),
    }


async def memory_case(port: int, label: str) -> None:
    """The child's side of one memory case: peak RSS after set-up, then after the case."""
    server = ServerProcess(port)
    run = _memory_cases(server)[label]
    # Set-up: what every case needs before the page (modules, loop, a warm client and thread).
    await retrieve(server.url("/site/p0.html", "bench.test"), _bench_options())
    await asyncio.to_thread(httpx.get, server.url("/site/p0.html"), timeout=60)
    before = _peak_rss_mib()
    outcome = "read"
    try:
        await run()
    except WebRetrievalError as error:
        outcome = f"refused: {error}"
    print(f"{before:.1f}\t{_peak_rss_mib():.1f}\t{outcome}", flush=True)


def measure_memory(server: ServerProcess) -> None:
    print(
        "peak whole-process RSS (getrusage ru_maxrss), a fresh process per case (body cap 5 MiB):"
    )
    print("  case                        set-up    peak   over set-up")
    for label in _memory_cases(server):
        done = subprocess.run(
            [sys.executable, __file__, "--memory-case", label, "--port", str(server.port)],
            capture_output=True,
            text=True,
            check=True,
        )
        before, after, outcome = done.stdout.strip().split("\t", 2)
        print(
            f"  {label:<26} {float(before):6.1f} {float(after):7.1f} "
            f"{float(after) - float(before):8.1f} MiB   {outcome[:60]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--memory-case", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve is not None:
        serve(arguments.serve)
        return
    if arguments.memory_case is not None:
        asyncio.run(memory_case(arguments.port, arguments.memory_case))
        return
    site = page_set(arguments.pages)
    with server_process(arguments.pages) as server:
        asyncio.run(time_pipelines(server, site, arguments.rounds))
        asyncio.run(count_calls(server, site))
        measure_memory(server)


if __name__ == "__main__":
    main()
