"""A small least-recently-used cache of encoded responses, bounded by their total bytes: moving a slider back to
where it was, or paging back, is answered without rendering again."""

import collections
import threading

MAX_CACHE_BYTES = 64 * 2**20


class ResponseCache:
    """{key: (body, headers)} holding at most `max_bytes` of bodies; safe to use from the server's worker threads."""

    def __init__(self, max_bytes: int = MAX_CACHE_BYTES):
        self.max_bytes, self.bytes = max_bytes, 0
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key) -> tuple[bytes, dict] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key, body: bytes, headers: dict) -> None:
        if len(body) > self.max_bytes:
            return  # one huge answer would push out everything else and still not fit
        with self._lock:
            old = self._entries.pop(key, None)
            self.bytes -= len(old[0]) if old else 0
            self._entries[key] = (body, headers)
            self.bytes += len(body)
            while self.bytes > self.max_bytes:
                _, (evicted, _) = self._entries.popitem(last=False)
                self.bytes -= len(evicted)
