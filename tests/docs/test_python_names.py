"""Every `policy.…` and `runtime.…` name the site and the README write in their text is one a
reader can reach: a module that imports, then attributes that exist — so a renamed function or
a moved class fails here, not in a reader's editor.

The names are those in inline code outside code blocks (the blocks run in tests/e2e), on every
page but the changelog, which also names what was renamed or removed. A name may
also be read as an attribute of the object its first word usually names in the pages
(`policy.findings`: a `Policy`; `runtime.aclose()`: a `ChatRuntime`), and a logger's name
(`logger runtime.mcp.server`) is not a Python name.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e._pages import name, pages

_CODE_BLOCK = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.M | re.S)
_NAME = re.compile(r"`((?:policy|runtime)(?:\.[A-Za-z_]\w*)+)(?=[(`\[ ])")
_LOGGER = re.compile(r"logger\s*\(?$")


@dataclass(frozen=True)
class _Name:
    page: str
    line: int
    dotted: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}: {self.dotted}"


def _names() -> list[_Name]:
    found = []
    for page in pages():
        if page.name == "CHANGELOG.md":
            continue
        text = page.read_text(encoding="utf-8")
        prose = _CODE_BLOCK.sub(lambda block: "\n" * block.group(0).count("\n"), text)
        for match in _NAME.finditer(prose):
            if _LOGGER.search(prose[max(0, match.start() - 12) : match.start()]):
                continue
            line = prose.count("\n", 0, match.start()) + 1
            found.append(_Name(name(page), line, match.group(1)))
    return found


def _has(holder: object, attribute: str) -> bool:
    if hasattr(holder, attribute):
        return True
    return isinstance(holder, type) and any(
        attribute in getattr(base, "__annotations__", {}) for base in holder.__mro__
    )


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            holder: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not _has(holder, attribute):
                break
            holder = getattr(holder, attribute, None)
        else:
            return True
        break
    instance_of = {"policy": ("policy", "Policy"), "runtime": ("runtime", "ChatRuntime")}
    module, class_name = instance_of[parts[0]]
    return len(parts) == 2 and _has(getattr(importlib.import_module(module), class_name), parts[1])


NAMES = _names()


def test_the_pages_name_python_names() -> None:
    assert len(NAMES) > 50
    assert any(n.dotted == "policy.config.reference" for n in NAMES)


@pytest.mark.parametrize("found", NAMES, ids=[n.where for n in NAMES])
def test_a_python_name_on_a_page_exists(found: _Name) -> None:
    assert _resolves(found.dotted), f"{found.where} names nothing importable"


def test_a_name_that_is_gone_is_found(tmp_path: Path) -> None:
    assert _resolves("policy.decide.registry.ToolRegistry")
    assert _resolves("policy.findings")  # a Policy's
    assert not _resolves("policy.decide.ToolRegistry")
    assert not _resolves("runtime.loop.NoSuchLoop")
    assert not _resolves("policy.no_such_attribute")
