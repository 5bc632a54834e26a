"""`dataclass`, the standard library's decorator with its methods made cheaply at import.

On Python 3.11, `dataclasses` compiles every method it generates from source with an `exec` of
its own: six for a frozen class (`__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__`,
`__delattr__`). The policy's modules define about eighty such classes on the path of
`policy check`, and those compilations were the largest part of what importing them cost. This
`dataclass` takes the same arguments and makes the same class: `dataclasses` still reads the
fields, makes the slots and records the class (`fields`, `replace`, `asdict` and `is_dataclass`
see no difference), only `__init__` is compiled (from the same source `dataclasses` writes, and
only once a class has made `_COMPILED_AFTER` instances: its first ones are made by one shared
function that assigns the fields the same way), and the other methods are shared functions over
the field names. Equality, hashing, `repr`,
freezing, pickling and copying behave as the standard library's. What this does not make itself
(ordering, `unsafe_hash`, keyword-only fields, `InitVar`, `weakref_slot`, dataclass bases) is
handed to `dataclasses.dataclass` whole.

Type checkers see `dataclasses.dataclass` itself.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import sys
from _thread import get_ident
from collections.abc import Callable
from operator import attrgetter
from types import MethodType
from typing import TYPE_CHECKING, Any

__all__ = ["dataclass"]

_MISSING: Any = dataclasses.MISSING
_HAS_DEFAULT_FACTORY: Any = dataclasses._HAS_DEFAULT_FACTORY  # type: ignore[attr-defined]


def _tuple_of(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The values of `names` on an object, as a tuple (what the generated methods compare)."""
    if not names:
        return lambda _: ()
    getter = attrgetter(*names)
    if len(names) == 1:
        return lambda instance: (getter(instance),)
    return getter


def _repr_function(names: tuple[str, ...]) -> Callable[[object], str]:
    running: set[tuple[int, int]] = set()

    def __repr__(self: object) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            running.discard(key)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__


def _eq_function(names: tuple[str, ...]) -> Callable[[object, object], object]:
    values = _tuple_of(names)

    def __eq__(self: object, other: object) -> object:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash_function(names: tuple[str, ...]) -> Callable[[object], int]:
    values = _tuple_of(names)

    def __hash__(self: object) -> int:
        return hash(values(self))

    return __hash__


def _frozen_functions(
    cls: type, names: tuple[str, ...]
) -> tuple[Callable[[object, str, object], None], Callable[[object, str], None]]:
    fields = frozenset(names)

    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in fields:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in fields:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __setattr__, __delattr__


def _getstate(self: object) -> list[object]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]  # type: ignore[arg-type]


def _setstate(self: object, state: list[object]) -> None:
    for field, value in zip(dataclasses.fields(self), state, strict=False):  # type: ignore[arg-type]
        object.__setattr__(self, field.name, value)


def _check_init_order(fields: list[dataclasses.Field[Any]]) -> None:
    """Refuse a field without a default after one with, in the words of the running Python's
    `dataclasses` (3.13 names the earlier field too)."""
    last_default: str | None = None
    for f in fields:
        if f.init:
            if f.default is not _MISSING or f.default_factory is not _MISSING:
                last_default = f.name
            elif last_default is not None:
                earlier = f" {last_default!r}" if sys.version_info >= (3, 13) else ""
                raise TypeError(
                    f"non-default argument {f.name!r} follows default argument{earlier}"
                )


def _init_function(
    cls: type, fields: list[dataclasses.Field[Any]], frozen: bool, slots: bool, post_init: bool
) -> Callable[..., None]:
    """`__init__` as `dataclasses` writes it: the same parameters, defaults, annotations and
    assignments. Only its body is compiled, as one function: the defaults and annotations are
    set on it, and the names the body uses are its globals."""
    self_name = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"
    factory_marker = _HAS_DEFAULT_FACTORY
    names: dict[str, Any] = {"_HAS_DEFAULT_FACTORY": factory_marker, "_setattr": object.__setattr__}
    parameters, defaults, body, annotations = [self_name], [], [], {}
    for f in fields:
        default_name = f"_dflt_{f.name}"
        value: str | None = f.name
        if f.init:
            parameters.append(f.name)
            annotations[f.name] = f.type
            if f.default_factory is not _MISSING:
                names[default_name] = f.default_factory
                defaults.append(factory_marker)
                value = f"{default_name}() if {f.name} is _HAS_DEFAULT_FACTORY else {f.name}"
            elif f.default is not _MISSING:
                defaults.append(f.default)
        elif f.default_factory is not _MISSING:
            names[default_name] = f.default_factory
            value = f"{default_name}()"
        elif slots and f.default is not _MISSING:
            names[default_name] = f.default
            value = default_name
        else:
            value = None
        if value is not None:
            body.append(
                f"_setattr({self_name},{f.name!r},{value})"
                if frozen
                else f"{self_name}.{f.name}={value}"
            )
    if post_init:
        body.append(f"{self_name}.__post_init__()")
    source = f"def __init__({','.join(parameters)}):\n" + "".join(
        f" {line}\n" for line in body or ["pass"]
    )
    exec(source, names)
    function: Callable[..., None] = names.pop("__init__")
    function.__defaults__ = tuple(defaults) or None
    function.__annotations__ = {**annotations, "return": None}
    function.__qualname__ = f"{cls.__qualname__}.__init__"
    function.__module__ = cls.__module__
    return function


_COMPILED_AFTER = 32
"""Instances a class makes with the shared `__init__` before its own is compiled."""
_ABSENT: Any = object()


class _InitOnFirstUse:
    """A class's `__init__` while it is young: the first `_COMPILED_AFTER` instances are made
    by one shared function that assigns the fields as the compiled `__init__` would, then the
    class's own `__init__` is compiled and put in its place (compiling one costs as much as a
    few hundred instances made the shared way, and a command instantiates most classes a few
    times). Every other look-up (`inspect.signature`, `help`, `Class.__init__`) and every call
    the shared function would not accept as Python binds arguments (a missing, unknown or
    repeated one) gets the compiled `__init__`, so the signature and the errors are Python's."""

    __slots__ = ("_build", "_cls", "_plan", "_uses")

    def __init__(
        self,
        cls: type,
        build: Callable[[], Callable[..., None]],
        plan: Callable[[], tuple[Any, ...]],
    ) -> None:
        self._cls, self._build = cls, build
        self._plan: tuple[Any, ...] | Callable[[], tuple[Any, ...]] = plan
        self._uses = 0

    def _compiled(self) -> Callable[..., None]:
        function = self._build()
        if self._cls.__dict__.get("__init__") is self:
            type.__setattr__(self._cls, "__init__", function)
        return function

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is not None and self._uses < _COMPILED_AFTER:
            self._uses += 1
            return MethodType(self._assign, instance)
        function = self._compiled()
        return function if instance is None else function.__get__(instance, owner)

    def _assign(self, instance: object, /, *args: Any, **kwargs: Any) -> None:
        plan = self._plan
        if callable(plan):
            plan = self._plan = plan()
        names, accepted, required, steps, frozen, post_init = plan
        given = dict(zip(names, args, strict=False))
        unusual = len(args) > len(names)
        if kwargs:
            for name in kwargs:
                unusual = unusual or name in given or name not in accepted
            given.update(kwargs)
        if unusual or not required <= given.keys():
            return self._compiled()(instance, *args, **kwargs)  # Python's own error
        assign = object.__setattr__ if frozen else setattr
        for name, init, default, factory in steps:
            if init:
                value = given.get(name, _ABSENT)
                if value is _ABSENT:
                    value = default if factory is _MISSING else factory()
                elif value is _HAS_DEFAULT_FACTORY and factory is not _MISSING:
                    value = factory()
            elif factory is not _MISSING:
                value = factory()
            elif default is not _ABSENT:
                value = default
            else:
                continue
            assign(instance, name, value)
        if post_init:
            instance.__post_init__()  # type: ignore[attr-defined]
        return None


def _init_plan(
    fields: list[dataclasses.Field[Any]], frozen: bool, slots: bool, post_init: bool
) -> tuple[Any, ...]:
    """What `_InitOnFirstUse._assign` does, in the order `_init_function` writes it: the
    parameters by position, those it accepts, those without a default, then per field its
    name, whether it is a parameter, its default (`_ABSENT`: a field left to its class
    attribute) and its default factory."""
    names = tuple(f.name for f in fields if f.init)
    required = frozenset(
        f.name for f in fields if f.init and f.default is _MISSING and f.default_factory is _MISSING
    )
    steps = tuple(
        (
            f.name,
            f.init,
            f.default if f.init or (slots and f.default is not _MISSING) else _ABSENT,
            f.default_factory,
        )
        for f in fields
    )
    return names, frozenset(names), required, steps, frozen, post_init


def _handled_whole(cls: type, options: dict[str, Any]) -> bool:
    """What only `dataclasses` makes: the class goes to it unchanged (a dataclass among its
    bases, an `InitVar` or `KW_ONLY` among its own annotations, or an option this does not
    make itself)."""
    if options["order"] or options["unsafe_hash"] or options["kw_only"] or options["weakref_slot"]:
        return True
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            return True
    # Read from the class's own namespace where it is there (a copy of it per class is what
    # `inspect.get_annotations` costs); where it is not (Python 3.14's lazy annotations), asked.
    annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if not isinstance(annotations, dict):
        annotations = inspect.get_annotations(cls)
    for annotation in annotations.values():
        text = annotation if isinstance(annotation, str) else str(annotation)
        if "InitVar" in text or "KW_ONLY" in text:
            return True
    return False


def _set_new(cls: type, name: str, function: Callable[..., Any]) -> None:
    """Give `cls` the method unless its body defines one (as `dataclasses` does)."""
    if name not in cls.__dict__:
        function.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, function)


def _process(cls: type, options: dict[str, Any]) -> type:
    if _handled_whole(cls, options):
        whole: type = dataclasses.dataclass(cls, **options)
        return whole
    init, repr_, eq, frozen = options["init"], options["repr"], options["eq"], options["frozen"]
    body = cls.__dict__
    explicit_hash = body.get("__hash__", _MISSING)
    has_explicit_hash = not (
        explicit_hash is _MISSING or (explicit_hash is None and "__eq__" in body)
    )
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in body:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    undocumented = not cls.__doc__
    if undocumented:
        # `dataclasses` would describe the class by the signature of `object()`, which parses it
        # from text with `tokenize` (compiling that module's patterns); it is described below.
        cls.__doc__ = cls.__name__
    made: type = dataclasses.dataclass(
        cls,
        init=False,
        repr=False,
        eq=False,
        frozen=False,
        match_args=options["match_args"],
        slots=options["slots"],
    )
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init, params.repr, params.eq, params.frozen = init, repr_, eq, frozen
    fields = list(dataclasses.fields(made))
    if init and "__init__" not in made.__dict__:
        _check_init_order(fields)
        post_init, slots = hasattr(made, "__post_init__"), options["slots"]
        lazy = _InitOnFirstUse(
            made,
            lambda: _init_function(made, fields, frozen, slots, post_init),
            lambda: _init_plan(fields, frozen, slots, post_init),
        )
        type.__setattr__(made, "__init__", lazy)
    if repr_:
        _set_new(made, "__repr__", _repr_function(tuple(f.name for f in fields if f.repr)))
    compared = tuple(f.name for f in fields if f.compare)
    if eq:
        _set_new(made, "__eq__", _eq_function(compared))
    if frozen:
        # Bound to the class as declared, before slots made a new one, as `dataclasses` binds them.
        setattr_, delattr_ = _frozen_functions(cls, tuple(f.name for f in fields))
        _set_new(made, "__setattr__", setattr_)
        _set_new(made, "__delattr__", delattr_)
        if options["slots"]:
            _set_new(made, "__getstate__", _getstate)
            _set_new(made, "__setstate__", _setstate)
    if eq and not has_explicit_hash:
        hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        hash_function = _hash_function(hashed) if frozen else None
        if hash_function is not None:
            hash_function.__qualname__ = f"{made.__qualname__}.__hash__"
        made.__hash__ = hash_function  # type: ignore[assignment]
    if undocumented:
        try:
            signature = str(inspect.signature(made)).replace(" -> None", "")
        except (TypeError, ValueError):
            signature = ""
        made.__doc__ = made.__name__ + signature
    abc.update_abstractmethods(made)
    return made


def _dataclass(
    cls: type | None = None,
    /,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Any:
    options = {
        "init": init,
        "repr": repr,
        "eq": eq,
        "order": order,
        "unsafe_hash": unsafe_hash,
        "frozen": frozen,
        "match_args": match_args,
        "kw_only": kw_only,
        "slots": slots,
        "weakref_slot": weakref_slot,
    }
    if cls is None:
        return lambda decorated: _process(decorated, options)
    return _process(cls, options)


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:
    dataclass = _dataclass
