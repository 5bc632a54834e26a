"""`policy._dataclass.dataclass` makes the class the standard library's decorator makes.

Each shape below is decorated twice, once by `dataclasses.dataclass` and once by ours, and every
behaviour a caller can see is compared: construction and its errors, repr, equality, hashing,
freezing, `fields`/`replace`/`asdict`, pickling, copying, slots, `__match_args__`, the
signature and the generated docstring.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

from policy._dataclass import _dataclass as ours

Decorator = Callable[..., Any]


def _publish(make: Callable[..., type], decorate: Decorator, name: str) -> type:
    """The class `make` declares, named `name` from its declaration on and findable by pickle
    as this module's `name`."""
    cls = make(decorate, name)
    cls.__name__ = name
    setattr(sys.modules[__name__], name, cls)
    return cls


def _frozen_slots(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(frozen=True, slots=True)
    class Shape:
        """A frozen, slotted record."""

        __qualname__ = qualname

        name: str
        count: int = 0
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
        secret: str = dataclasses.field(default="", repr=False)
        note: str = dataclasses.field(default="", compare=False)
        listed: list[int] = dataclasses.field(default_factory=list, hash=False)
        kind: ClassVar[str] = "shape"

    return Shape


def _mutable_slots(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(slots=True)
    class Shape:
        """A mutable, slotted record."""

        __qualname__ = qualname

        name: str
        items: list[str] = dataclasses.field(default_factory=list)
        fixed: str = dataclasses.field(default="fixed", init=False)

    return Shape


def _plain(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate
    class Shape:
        __qualname__ = qualname
        label: str
        value: object = None

    return Shape


def _post_init(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(frozen=True, slots=True)
    class Shape:
        """Checks itself after construction."""

        __qualname__ = qualname

        low: int
        high: int

        def __post_init__(self) -> None:
            if self.low > self.high:
                raise ValueError(f"low {self.low} above high {self.high}")

    return Shape


def _own_methods(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(frozen=True, slots=True, init=False)
    class Shape:
        """Defines what it wants itself."""

        __qualname__ = qualname

        text: str

        def __init__(self, raw: str) -> None:
            object.__setattr__(self, "text", raw.strip())

        def __repr__(self) -> str:
            return f"<{self.text}>"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Shape) and self.text.lower() == other.text.lower()

        def __hash__(self) -> int:
            return hash(self.text.lower())

    return Shape


def _no_eq(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(frozen=True, eq=False)
    class Shape:
        """Compared by identity."""

        __qualname__ = qualname

        name: str

    return Shape


def _self_field(decorate: Decorator, qualname: str = "Shape") -> type:
    @decorate(frozen=True)
    class Shape:
        """Has a field named self."""

        __qualname__ = qualname

        self: str
        other: int = 1

    return Shape


SHAPES = {
    "frozen_slots": (_frozen_slots, (("a",), {"count": 2, "tags": ("x",), "secret": "s"})),
    "mutable_slots": (_mutable_slots, (("a",), {"items": ["x"]})),
    "plain": (_plain, (("a",), {"value": 3})),
    "post_init": (_post_init, ((1, 2), {})),
    "own_methods": (_own_methods, ((" Ab ",), {})),
    "no_eq": (_no_eq, (("a",), {})),
    "self_field": (_self_field, (("a",), {"other": 2})),
}


@pytest.fixture(params=sorted(SHAPES), name="pair")
def _pair(request: pytest.FixtureRequest) -> tuple[type, type, tuple[Any, ...], dict[str, Any]]:
    make, (args, kwargs) = SHAPES[request.param]
    standard = _publish(make, dataclasses.dataclass, f"Standard_{request.param}")
    cheap = _publish(make, ours, f"Ours_{request.param}")
    return standard, cheap, args, kwargs


def _outcome(action: Callable[[], object]) -> tuple[str, str]:
    try:
        shown = repr(action())
    except Exception as error:  # the error itself is what is compared
        return type(error).__name__, str(error).replace("Standard_", "").replace("Ours_", "")
    return "ok", shown.replace("Standard_", "").replace("Ours_", "")


def _same(standard: type, cheap: type, check: Callable[[type], object], message: str = "") -> None:
    assert _outcome(lambda: check(cheap)) == _outcome(lambda: check(standard)), message


def test_construction_repr_and_errors_are_the_same(pair: Any) -> None:
    standard, cheap, args, kwargs = pair
    _same(standard, cheap, lambda cls: cls(*args, **kwargs))
    _same(standard, cheap, lambda cls: cls(*args))
    _same(standard, cheap, lambda cls: cls())
    _same(standard, cheap, lambda cls: cls(*args, unknown=1))
    _same(standard, cheap, lambda cls: cls(*args, *args, *args, *args, *args, *args, *args))
    _same(standard, cheap, lambda cls: str(inspect.signature(cls)))
    _same(standard, cheap, lambda cls: cls.__doc__)
    _same(standard, cheap, lambda cls: cls.__match_args__)
    _same(standard, cheap, lambda cls: getattr(cls, "__slots__", None))
    _same(standard, cheap, lambda cls: [f.name for f in dataclasses.fields(cls)])
    _same(standard, cheap, lambda cls: dataclasses.is_dataclass(cls))
    params = ("init", "repr", "eq", "order", "unsafe_hash", "frozen")
    _same(standard, cheap, lambda cls: [getattr(cls.__dataclass_params__, p) for p in params])
    _same(standard, cheap, lambda cls: cls.__hash__ is None)
    _same(standard, cheap, lambda cls: cls.__init__.__qualname__.split(".")[-1])
    _same(standard, cheap, lambda cls: (cls.__init__.__module__, cls.__init__.__annotations__))


def test_instances_behave_the_same(pair: Any) -> None:
    standard, cheap, args, kwargs = pair
    first = {cls: cls(*args, **kwargs) for cls in (standard, cheap)}
    second = {cls: cls(*args, **kwargs) for cls in (standard, cheap)}
    _same(standard, cheap, lambda cls: repr(first[cls]))
    _same(standard, cheap, lambda cls: first[cls] == second[cls])
    _same(standard, cheap, lambda cls: first[cls] != second[cls])
    _same(standard, cheap, lambda cls: first[cls] == "other")
    _same(standard, cheap, lambda cls: first[cls].__eq__(object()))
    _same(standard, cheap, lambda cls: first[cls] == first[cheap if cls is standard else standard])
    _same(standard, cheap, lambda cls: hash(first[cls]) == hash(second[cls]))
    _same(
        standard,
        cheap,
        lambda cls: "by identity" if cls.__hash__ is object.__hash__ else hash(first[cls]),
    )
    _same(standard, cheap, lambda cls: dataclasses.asdict(first[cls]))
    _same(standard, cheap, lambda cls: dataclasses.astuple(first[cls]))
    _same(standard, cheap, lambda cls: dataclasses.replace(first[cls]) == first[cls])
    field = dataclasses.fields(standard)[0].name
    _same(standard, cheap, lambda cls: setattr(first[cls], field, first[cls]))
    _same(standard, cheap, lambda cls: repr(first[cls]))
    _same(standard, cheap, lambda cls: delattr(second[cls], field))
    _same(standard, cheap, lambda cls: setattr(second[cls], "not_a_field", 1))
    _same(standard, cheap, lambda cls: pickle.loads(pickle.dumps(second[cls])))
    _same(standard, cheap, lambda cls: copy.copy(second[cls]))
    _same(standard, cheap, lambda cls: copy.deepcopy(second[cls]))


def test_a_checking_post_init_and_a_mutable_default_fail_the_same() -> None:
    standard, cheap = _post_init(dataclasses.dataclass), _post_init(ours)
    _same(standard, cheap, lambda cls: cls(3, 1))

    def mutable_default(decorate: Decorator) -> type:
        @decorate(frozen=True)
        class Shape:
            items: list[str] = []  # noqa: RUF012  (the mistake under test)

        return Shape

    _same(dataclasses.dataclass, ours, mutable_default)  # type: ignore[arg-type]


def test_a_misdeclared_class_is_refused_as_the_standard_library_refuses_it() -> None:
    def default_first(decorate: Decorator) -> type:
        @decorate(frozen=True, slots=True)
        class Shape:
            a: int = 0
            b: int  # type: ignore[misc]  (the mistake under test)

        return Shape

    def frozen_setattr(decorate: Decorator) -> type:
        @decorate(frozen=True)
        class Shape:
            a: int

            def __setattr__(self, name: str, value: object) -> None:
                pass

        return Shape

    for make in (default_first, frozen_setattr):
        _same(dataclasses.dataclass, ours, make)  # type: ignore[arg-type]


def test_what_it_does_not_make_itself_goes_to_the_standard_library_whole() -> None:
    @ours(frozen=True, order=True)
    class Ordered:
        a: int

    @ours(frozen=True, slots=True)
    class Base:
        a: int

    @ours(frozen=True, slots=True)
    class Derived(Base):
        b: int = 0

    assert Ordered(1) < Ordered(2)
    assert Derived(1, 2) == Derived(1, 2) != Derived(1, 3)
    assert repr(Derived(1)).endswith(".<locals>.Derived(a=1, b=0)")
    with pytest.raises(dataclasses.FrozenInstanceError):
        Derived(1).b = 2  # type: ignore[misc]


def test_every_policy_module_declares_its_dataclasses_with_the_cheap_decorator() -> None:
    """A policy module importing `dataclasses.dataclass` would compile six methods from source
    per frozen class again at import (`policy check` imports most of them)."""
    root = Path(__file__).resolve().parents[2] / "policy"
    offenders = [
        str(path.relative_to(root.parent))
        for path in sorted(root.rglob("*.py"))
        if path.name != "_dataclass.py"
        and re.search(
            r"^\s*(from dataclasses import [^\n]*\bdataclass\b|@dataclasses\.dataclass)",
            path.read_text(encoding="utf-8"),
            re.M,
        )
    ]
    assert offenders == [], (
        f"{offenders}: declare dataclasses with `from policy._dataclass import dataclass`"
    )


def test_init_made_on_first_use_serves_a_plain_subclass_and_keeps_its_signature() -> None:
    for decorate in (dataclasses.dataclass, ours):
        base = _frozen_slots(decorate)

        class Plain(base):  # type: ignore[valid-type, misc]
            __slots__ = ()

        assert repr(Plain("a", 2)).endswith(
            ".Plain(name='a', count=2, tags=(), note='', listed=[])"
        )
        assert base("a") == base("a")
        assert base.__init__ is Plain.__init__
        assert list(inspect.signature(base).parameters)[:2] == ["name", "count"]


def test_young_and_compiled_inits_make_the_same_instances(pair: Any) -> None:
    """A class's first instances are made by the shared `__init__`, the later ones by its own
    compiled one (`_COMPILED_AFTER`): every instance equals the standard library's, each default
    factory is called per instance, `__post_init__` runs, and calls Python would refuse are
    refused in Python's words on both sides of the switch."""
    from policy._dataclass import _COMPILED_AFTER

    standard, cheap, args, kwargs = pair
    for made in range(_COMPILED_AFTER + 3):
        _same(standard, cheap, lambda cls: cls(*args, **kwargs), f"instance {made}")
        _same(standard, cheap, lambda cls: cls(*args, **kwargs, unknown=1), f"instance {made}")
        _same(standard, cheap, lambda cls: cls(*args, *args, *args, *args, *args, *args, *args))
        made_twice = [cheap(*args) for _ in range(2)]
        for field in dataclasses.fields(cheap):
            value = getattr(made_twice[0], field.name, None)
            if (
                isinstance(value, list | dict | set)
                and field.default_factory is not dataclasses.MISSING
            ):
                assert value is not getattr(made_twice[1], field.name), field.name
    assert inspect.isfunction(cheap.__dict__["__init__"])
    _same(standard, cheap, lambda cls: str(inspect.signature(cls)))
