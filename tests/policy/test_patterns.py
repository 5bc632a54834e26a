"""`policy._patterns.LazyPattern` answers as the compiled pattern does, compiling on first use."""

from __future__ import annotations

import re

from policy._patterns import LazyPattern


def test_a_lazy_pattern_compiles_on_first_use_and_answers_as_re_does() -> None:
    source, flags = r"(?P<key>\w+)=(\d+)", re.IGNORECASE
    lazy, compiled = LazyPattern(source, flags), re.compile(source, flags)
    assert lazy._compiled is None
    text = "a=1, B=22; c=x"
    assert lazy.match(text).groups() == compiled.match(text).groups()  # type: ignore[union-attr]
    assert lazy.compiled is lazy.compiled
    assert lazy.search(text, 3).span() == compiled.search(text, 3).span()  # type: ignore[union-attr]
    assert lazy.fullmatch("k=9") is not None and lazy.fullmatch("k=9 ") is None
    assert lazy.findall(text) == compiled.findall(text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.split(text, 1) == compiled.split(text, 1)
    assert lazy.sub(lambda m: m["key"].upper(), text) == compiled.sub(
        lambda m: m["key"].upper(), text
    )
    assert lazy.sub(r"\2", text, 1) == compiled.sub(r"\2", text, 1)
    assert (lazy.pattern, lazy.flags) == (source, flags)
