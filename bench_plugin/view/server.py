"""The local server: the standard library's threaded HTTP server answering GETs with the site's pages.

Why not a framework: the site is a handful of GET routes over data in memory; ``http.server`` serves them with
no dependency to install. It listens on 127.0.0.1 unless told otherwise, answers only requests addressed to
the host it listens as (a page elsewhere cannot reach it through a DNS name rebound to 127.0.0.1), and sends
every page with its Content-Security-Policy and no caching.
"""

from __future__ import annotations

import re
import threading
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from bench_plugin.view.pages import HEADER_CSP
from bench_plugin.view.site import Response, Site

LOOPBACK = "127.0.0.1"
_LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")


class ViewServer(ThreadingHTTPServer):
    """A threaded HTTP server holding the site it serves."""

    daemon_threads = True

    def __init__(self, site: Site, host: str = LOOPBACK, port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.site = site
        self.host = host

    @property
    def url(self) -> str:
        """The address of the runs page."""
        host, port = self.server_address[:2]
        shown = LOOPBACK if host in ("", "0.0.0.0") else str(host)
        return f"http://{shown}:{port}/"

    def allows(self, host_header: str) -> bool:
        """Whether a request's Host is this server: a loopback name and its port (any name when told another host)."""
        found = _HOST.fullmatch(host_header.strip().lower())
        if found is None or (found["port"] and int(found["port"]) != self.server_address[1]):
            return False
        if found["name"] in _LOCAL_NAMES:
            return True
        # listening on another address, the names it is reached by are not known here (the user was warned)
        return self.host not in (LOOPBACK, "localhost") and bool(found["name"])


_HOST = re.compile(r"(?P<name>\[[0-9a-f:.]*\]|[^:\[\]]*)(?::(?P<port>\d{1,5}))?")


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer

    def version_string(self) -> str:
        """The Server header: no Python version on the wire."""
        return "bench-view"

    def do_GET(self) -> None:
        if not self.server.allows(self.headers.get("Host", "")):
            self._send(Response(421, b"Misdirected request", "text/plain; charset=utf-8"))
            return
        address = urlsplit(self.path)
        self._send(self.server.site.respond(address.path, address.query))

    def do_HEAD(self) -> None:
        self.do_GET()

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("Content-Security-Policy", HEADER_CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        if response.location is not None:
            self.send_header("Location", response.location)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a page view is not worth a line on the terminal."""


def serve_view(site: Site, *, host: str = LOOPBACK, port: int = 0, open_browser: bool = True,
               announce: Callable[[str], None] = print) -> None:
    """Serve ``site`` until interrupted; open the browser on it unless told not to.

    Raises:
        OSError: the address cannot be listened on (a port in use).
    """
    server = ViewServer(site, host, port)
    threading.Thread(target=site.warm, name="bench-view-index", daemon=True).start()  # pages wait for it, not start-up
    announce(f"bench view: serving {len(site.indexes.sources)} run(s) at {server.url} (Ctrl-C stops)")
    if open_browser:
        threading.Timer(0.2, webbrowser.open, args=(server.url,)).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        announce("bench view: stopped")
    finally:
        server.server_close()
