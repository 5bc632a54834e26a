"""A worker's view of a shared chat store in which another worker tightens the chat between this
worker's next read and its save: the interleaving two racing workers produce, made certain."""

from __future__ import annotations

from collections.abc import Callable

from runtime.chat import ChatRecord, ChatStore


class ReadThenRaced:
    """Delegates to `store`; after the next `load`, `other_writer` runs (once) before it returns."""

    def __init__(self, store: ChatStore) -> None:
        self._store = store
        self.other_writer: Callable[[], object] | None = None

    def load(self, chat_id: str) -> ChatRecord | None:
        record = self._store.load(chat_id)
        if self.other_writer is not None:
            self.other_writer, other = None, self.other_writer
            other()
        return record

    def save(self, record: ChatRecord) -> None:
        self._store.save(record)
