"""The order of the offer checks, written once: each check module in `policy/decide/checks/`
names its `place`, and `CHECKS` is every module's `CHECK` by ascending place.

Adding a check is one module there (an `OfferCheck` subclass and `CHECK = YourCheck()`) plus its
test; nothing else lists the checks. Two checks with one place or one name are refused here, at
import, naming both modules.
"""

from __future__ import annotations

import os
from importlib import import_module
from inspect import getmodulename

from policy.decide import checks
from policy.decide.check import OfferCheck


def _module_names() -> list[str]:
    """The modules and packages in `checks`' folders, as `pkgutil.iter_modules` names them
    (a file by any module suffix, a folder with an `__init__`), without importing `pkgutil`
    (whose import alone cost every deciding command more than finding the checks)."""
    names: set[str] = set()
    for folder in checks.__path__:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            name = getmodulename(entry)
            if name is None and "." not in entry:
                package = os.path.join(folder, entry)
                if os.path.isdir(package) and any(
                    getmodulename(inner) == "__init__" for inner in os.listdir(package)
                ):
                    name = entry
            if name is not None and name != "__init__" and name.isidentifier():
                names.add(name)
    return sorted(names)


def _discovered() -> tuple[OfferCheck, ...]:
    found: dict[str, OfferCheck] = {}
    for name in _module_names():
        module = import_module(f"{checks.__name__}.{name}")
        check = getattr(module, "CHECK", None)
        if not isinstance(check, OfferCheck):
            raise TypeError(f"{module.__name__} has no CHECK (an OfferCheck instance)")
        found[module.__name__] = check
    for attribute in ("place", "name"):
        seen: dict[object, str] = {}
        for module_name, check in found.items():
            value = getattr(check, attribute)
            if value in seen:
                raise ValueError(
                    f"two offer checks have the {attribute} {value!r}: {seen[value]} and "
                    f"{module_name}"
                )
            seen[value] = module_name
    return tuple(sorted(found.values(), key=lambda c: c.place))


CHECKS: tuple[OfferCheck, ...] = _discovered()
"""Every offer check, in the order a decision asks them; the first that fails is its reason."""
