"""Benchmark: what deeply nested YAML costs before and after the limits are checked first.

    .venv/bin/python bench/yaml_limits.py [--repeat N]

ruamel.yaml's scanner takes time quadratic in the depth of flow collections, so a few KB of
`[[[[…` pasted into `policy serve`'s simulate form, or saved as a user settings file, cost
seconds of CPU before any depth check on the parsed data could run. For nested inputs of 2 KB
and 4 KB (balanced flow sequences after `tools: `, about 1,000 and 2,000 levels), it prints the
process CPU of:

- before: what reading them did until the limits were checked first — ruamel.yaml's round-trip
  loader over the text (it ends in a RecursionError, which was then reported);
- after: `policy.user_settings.parse_user_settings`, which refuses the text after
  `policy.yaml_limits.yaml_limit_exceeded` read it once;

and, to show the check is linear and cheap where nothing is refused, the check alone over the
largest text parsed (256 KiB of settings-like YAML, µs per KiB) and the parse of an ordinary
settings file with and without it. Medians of `--repeat` runs (the "before" figures once: they
take seconds). This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _cpu(run: Callable[[], object], repeat: int) -> float:
    """Median process CPU seconds of `run`, exceptions included (a refusal is the result)."""
    samples = []
    for _ in range(repeat):
        started = time.process_time()
        with contextlib.suppress(Exception):
            run()
        samples.append(time.process_time() - started)
    return statistics.median(samples)


def _ruamel(text: str) -> Callable[[], object]:
    def load() -> object:
        from ruamel.yaml import YAML

        try:
            return YAML(typ="rt").load(text)
        except RecursionError:
            return None

    return load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    from policy.user_settings import parse_user_settings
    from policy.yaml_limits import MAX_YAML_BYTES, yaml_limit_exceeded

    _ruamel("a: 1")()  # imports and first-use work out of the figures
    figures: dict[str, str] = {}
    for size in (2048, 4096):
        depth = (size - len("tools: ")) // 2
        text = "tools: " + "[" * depth + "]" * depth
        before = _cpu(_ruamel(text), 1)
        after = _cpu(lambda text=text: parse_user_settings(text, "bench"), args.repeat)
        figures[f"nested_{size // 1024}kb_before_cpu_s"] = f"{before:.3f}"
        figures[f"nested_{size // 1024}kb_after_cpu_ms"] = f"{after * 1e3:.3f}"
        figures[f"nested_{size // 1024}kb_before_over_after"] = f"{before / after:,.0f}x"

    entry = "  web_search:\n    enabled: true\n    settings:\n      maxResults: '12'\n"
    largest = "tools:\n" + entry * (MAX_YAML_BYTES // len(entry) - 1)
    check = _cpu(lambda: yaml_limit_exceeded(largest), args.repeat)
    figures["check_alone_256kib_ms"] = f"{check * 1e3:.2f}"
    figures["check_alone_us_per_kib"] = f"{check * 1e6 / (len(largest) / 1024):.1f}"
    ordinary = "tools:\n" + entry + "confidence:\n  scheme: TRUST_ALL\n"
    with_check = _cpu(lambda: parse_user_settings(ordinary, "bench"), args.repeat)
    ruamel_only = _cpu(_ruamel(ordinary), args.repeat)
    check_only = _cpu(lambda: yaml_limit_exceeded(ordinary), args.repeat)
    figures["ordinary_file_parse_ms"] = f"{with_check * 1e3:.3f}"
    figures["ordinary_file_ruamel_load_ms"] = f"{ruamel_only * 1e3:.3f}"
    figures["ordinary_file_check_us"] = f"{check_only * 1e6:.1f}"
    for key, value in figures.items():
        print(f"{key:40} {value}")


if __name__ == "__main__":
    main()
