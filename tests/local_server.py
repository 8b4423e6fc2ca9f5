"""The lifecycle the local stand-ins for unreachable services share: an HTTP server on a
random port, in a daemon thread, as a context manager."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer(ABC):
    host = "127.0.0.1"

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @abstractmethod
    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server's state."""

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    def start(self):
        self._httpd = ThreadingHTTPServer((self.host, 0), self.handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name=type(self).__name__
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
