"""Names a module hands out but loads on first use (PEP 562), so importing it stays cheap.

`policy`, `runtime`, `runtime.adapters`, the two errors modules and the runtime's seam into the
policy each hand out names defined elsewhere: each keeps a table name → defining module and asks
this for its module-level `__getattr__` and `__dir__` (the runtime through `policy._runtime_seam`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_attributes(
    owner: str, namespace: dict[str, Any], defined_in: Mapping[str, str], listed: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for module `owner`: a name in `defined_in` is imported from
    its module on first use and kept in `namespace` (the module's globals); any other is an
    AttributeError naming the module."""
    shown = frozenset(listed)

    def __getattr__(name: str) -> Any:
        module = defined_in.get(name)
        if module is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *shown})

    return __getattr__, __dir__
