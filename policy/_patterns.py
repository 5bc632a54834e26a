"""Regular expressions compiled when first used, so importing a module compiles none it needs
only now and then.

Compiling a pattern runs `re`'s parser and compiler in Python; a module that compiles its
patterns at import makes every command that imports it pay for all of them (`policy check`
imports dozens of modules and used to compile some seventy patterns). A module declares
`_NAME = LazyPattern(r"...")` where it would write `re.compile(r"...")` and uses it the same way.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LazyPattern"]


class LazyPattern:
    """`re.compile(source, flags)`, compiled on the first match, search, split, sub or findall."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(string, maxsplit)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self.flags!r})"
