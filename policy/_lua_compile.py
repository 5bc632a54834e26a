"""Compile Lua text to bytecode, once per distinct text, inside the sandbox's worker process.

Parsing never runs plugin code, but rewriting and parsing a hostile multi-megabyte text takes
seconds, so it happens in the worker, under the wall-clock cap; the cache lives as long as the
worker, so a plugin that is loaded again (hot reload) skips both the rewrite and the parse.
Bytecode we produced ourselves is the only binary chunk the sandbox ever loads. The prelude is
compiled in the parent before the worker is forked, so every worker starts with it.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Any

from policy._dataclass import dataclass
from policy._lua_prelude import PRELUDE
from policy._lua_rewrite import NO_CONSTRUCTORS, prepare_chunk

_COMPILER_SOURCE = b"""
local load, dump = load, string.dump
return function(source, name, strip)
  local chunk, problem = load(source, name, "t", {})
  if chunk == nil then return nil, problem end
  return dump(chunk, strip)
end
"""
_COMPILER_MEMORY = 256 * 1024 * 1024
_lock = threading.Lock()
_compiler: Any = None


@dataclass(frozen=True, slots=True)
class CompiledChunk:
    """Bytecode plus the constructor table; `problem` is Lua's syntax error instead."""

    bytecode: bytes | None
    constructors_lua: bytes
    constructor_count: int
    problem: str | None = None


def _chunk_name(file_index: int) -> bytes:
    return b"=@%d" % file_index


def _compile_text(
    source: str, name: bytes, *, strip: bool = False
) -> tuple[bytes | None, str | None]:
    global _compiler
    with _lock:
        if _compiler is None:
            from lupa import lua54

            runtime = lua54.LuaRuntime(
                max_memory=_COMPILER_MEMORY,
                encoding=None,
                register_eval=False,
                register_builtins=False,
                unpack_returned_tuples=True,
            )
            _compiler = runtime.execute(_COMPILER_SOURCE)
        outcome = _compiler(source.encode(), name, strip)
    if isinstance(outcome, tuple):
        problem = outcome[1]
        return None, problem.decode("utf-8", "replace") if isinstance(problem, bytes) else str(
            problem
        )
    return bytes(outcome), None


@lru_cache(maxsize=64)
def compile_chunk(text: str, file_index: int, first_constructor: int) -> CompiledChunk:
    """Rewrite (for line tracking) and compile newline-normalized `text`."""
    prepared = prepare_chunk(text, file_index, first_constructor)
    name = _chunk_name(file_index)
    if prepared.source is not None:
        bytecode, _ = _compile_text(prepared.source, name)
        if bytecode is not None:
            return CompiledChunk(
                bytecode, prepared.constructors_lua.encode(), prepared.constructor_count
            )
    bytecode, problem = _compile_text(text, name)
    # Only reached when rewriting failed: the original text runs without entry-level lines.
    return CompiledChunk(bytecode, NO_CONSTRUCTORS.encode(), 0, problem)


@lru_cache(maxsize=1)
def prelude_bytecode() -> bytes:
    bytecode, problem = _compile_text(PRELUDE, b"=sandbox", strip=True)
    if bytecode is None:
        raise RuntimeError(f"the sandbox prelude does not compile: {problem}")
    return bytecode


def _forget_in_child() -> None:
    """A fork may have caught another thread compiling: the child starts a compiler of its own."""
    global _lock, _compiler
    _lock = threading.Lock()
    _compiler = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
