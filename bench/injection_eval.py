"""How well the built-in prompt-injection filter catches benchmark attacks, and what it costs.

Run: `flock /work/.bench.lock python bench/injection_eval.py` (method in bench/README.md).

Corpora, all filtered exactly as the runtime filters a tool result (`scan_text` with the tool
call's offered tool names):
- AgentDojo attacks (`bench/data/agentdojo.jsonl.xz`, made by `bench/agentdojo_corpus.py`): every
  suite's tool outputs with each attack template's injection, as AgentDojo's YAML and as JSON.
  Caught when the injection task's goal sentence is no longer intact in the filtered text
  (compared with whitespace collapsed, in the text and in its parsed string values).
- AgentDojo benign outputs: the same calls without injections. A false positive is any removal.
- Hard negatives: `bench/data/hard_negatives.jsonl` (security articles quoting injections,
  release notes, command tables, code, tokenizer vocabularies, e-mails, to-do lists, notices and
  tickets asking a person to act), reported as two splits: `dev`, the texts the rules were shaped
  against, and `held_out`, texts never used to change a rule; the README of every installed
  distribution, and Python sources of installed packages.

Throughput is MB (10^6 bytes of UTF-8) per second of one `scan_text` pass over each corpus, in
wall time and in this process's CPU time (on a shared machine the wall time mostly measures the
load), next to `str.lower()` over the same texts (CPU time, best of 3) in the same run, and the
ratio of the two CPU figures (how many times `str.lower()`'s cost the filter takes): the floor
moves with the machine and its load, the ratio much less.
"""

from __future__ import annotations

import ast
import json
import lzma
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runtime.web.guard import NO_FILTER_CONTEXT, FilterContext
from runtime.web.injection_filter import scan_text

DATA = Path(__file__).parent / "data"
MAX_TEXT_CHARACTERS = 100_000
SOURCE_PACKAGES = ("httpx", "click", "jinja2", "starlette", "pydantic", "trafilatura", "mcp")
"""Packages whose Python sources serve as code hard negatives."""
TIMING_ROUNDS = 3
"""`str.lower()` is timed best of this many rounds; the filter once (its results are the ones counted)."""


@dataclass(slots=True)
class _Case:
    text: str
    context: FilterContext = NO_FILTER_CONTEXT
    goal: str = ""


@dataclass(slots=True)
class _Corpus:
    name: str
    cases: list[_Case] = field(default_factory=list)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _parsed_strings(text: str) -> str:
    """The string values of the text read as JSON, YAML or a Python literal (else nothing)."""
    from ruamel.yaml import YAML

    readers: tuple[Callable[[str], Any], ...] = (
        json.loads,
        ast.literal_eval,
        YAML(typ="safe", pure=True).load,
    )
    for read in readers:
        try:
            return "\n".join(_strings(read(text)))
        except Exception:
            continue
    return ""


def goal_intact(filtered: str, goal: str) -> bool:
    wanted = _collapse(goal)
    return wanted in _collapse(filtered) or wanted in _collapse(_parsed_strings(filtered))


def _agentdojo() -> tuple[dict[str, _Corpus], _Corpus]:
    attacks: dict[str, _Corpus] = {}
    benign = _Corpus("AgentDojo benign outputs")
    tools: dict[str, FilterContext] = {}
    with lzma.open(DATA / "agentdojo.jsonl.xz", "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["kind"] == "suite":
                tools[record["suite"]] = FilterContext(frozenset(record["tools"]))
                continue
            case = _Case(record["text"], tools[record["suite"]], record.get("goal", ""))
            if record["kind"] == "benign":
                benign.cases.append(case)
            else:
                attacks.setdefault(record["attack"], _Corpus(record["attack"])).cases.append(case)
    return attacks, benign


def _hard_negatives() -> list[_Corpus]:
    splits = {
        "dev": _Corpus("hard negatives, dev split (bench/data)"),
        "held_out": _Corpus("hard negatives, held-out split (bench/data)"),
    }
    with open(DATA / "hard_negatives.jsonl", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            splits[record["split"]].cases.append(_Case(record["text"]))
    readmes = _Corpus("installed package READMEs")
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata["Name"].lower()):
        body = dist.metadata.get_payload() if hasattr(dist.metadata, "get_payload") else ""
        body = body or dist.metadata.get("Description", "") or ""
        if isinstance(body, str) and len(body) >= 500:
            readmes.cases.append(_Case(body[:MAX_TEXT_CHARACTERS]))
    code = _Corpus("Python sources of installed packages")
    for package in SOURCE_PACKAGES:
        try:
            files = metadata.files(package) or []
        except metadata.PackageNotFoundError:
            continue
        for file in sorted(str(f) for f in files if str(f).endswith(".py")):
            path = Path(metadata.distribution(package).locate_file(file))
            text = path.read_text(encoding="utf-8", errors="replace")
            if text.strip():
                code.cases.append(_Case(text[:MAX_TEXT_CHARACTERS]))
    return [*splits.values(), readmes, code]


@dataclass(slots=True)
class _Row:
    corpus: str
    texts: int
    megabytes: float
    caught: int | None
    removed: int
    ours_mb_s: float
    ours_cpu_mb_s: float
    lower_mb_s: float
    examples: list[str] = field(default_factory=list)


def _best_cpu_seconds(work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(TIMING_ROUNDS):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def _measure(corpus: _Corpus, attack: bool) -> _Row:
    megabytes = sum(len(case.text.encode("utf-8")) for case in corpus.cases) / 1e6
    started, started_cpu = time.perf_counter(), time.process_time()
    results = [scan_text(case.text, case.context) for case in corpus.cases]
    ours, ours_cpu = time.perf_counter() - started, time.process_time() - started_cpu
    lower = _best_cpu_seconds(lambda: [c.text.lower() for c in corpus.cases])
    removed = sum(1 for result in results if result.redacted_count)
    caught = None
    examples: list[str] = []
    if attack:
        caught = 0
        for case, result in zip(corpus.cases, results, strict=True):
            if goal_intact(result.sanitized_text, case.goal):
                if len(examples) < 2:
                    examples.append(case.goal[:80])
            else:
                caught += 1
    else:
        for result in results:
            if result.redacted_count and len(examples) < 3:
                examples.extend(f"{f.rule_id}: {f.snippet[:70]}" for f in result.findings[:1])
    return _Row(
        corpus.name,
        len(corpus.cases),
        megabytes,
        caught,
        removed,
        megabytes / ours if ours else float("inf"),
        megabytes / ours_cpu if ours_cpu else float("inf"),
        megabytes / lower if lower else float("inf"),
        examples,
    )


def main() -> None:
    attacks, benign = _agentdojo()
    rows = [_measure(corpus, True) for corpus in attacks.values()]
    rows.append(_measure(benign, False))
    rows.extend(_measure(corpus, False) for corpus in _hard_negatives())
    print(
        "| corpus | texts | MB | recall | false positives | ours MB/s (wall) | ours MB/s (CPU) "
        "| str.lower() MB/s (CPU) | CPU ÷ str.lower() |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        if row.caught is not None:
            recall = f"{100 * row.caught / row.texts:.1f}% ({row.caught})"
            false_positives = ""
        else:
            recall = ""
            false_positives = f"{100 * row.removed / row.texts:.1f}% ({row.removed})"
        print(
            f"| {row.corpus} | {row.texts} | {row.megabytes:.2f} | {recall} | {false_positives} "
            f"| {row.ours_mb_s:.1f} | {row.ours_cpu_mb_s:.1f} | {row.lower_mb_s:.0f} "
            f"| {row.lower_mb_s / row.ours_cpu_mb_s:.0f}× |"
        )
    missed: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        missed[row.corpus].extend(row.examples)
    print("\nExamples (missed goals for attacks, first removals for the rest):")
    for corpus, examples in missed.items():
        for example in examples:
            print(f"- {corpus}: {example}")


if __name__ == "__main__":
    main()
