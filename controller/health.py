"""Health probes and Prometheus metrics over HTTP: `/healthz`, `/readyz`, `/metrics`.

Liveness says the process's loops are alive (a wedged watch thread fails it, and the kubelet
restarts the Pod); readiness says it has listed everything it watches and, with a source
repository, that its Git remote answers (503 with `Retry-After` and a JSON body naming why not).
A standby replica that waits for the Lease is alive and ready: it serves nothing that readiness gates.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("btp_gitops.controller.health")


class ProbeServer:
    """Serves the probes on `host:port` (port 0 picks a free one) from a daemon thread."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        healthy: Callable[[], bool],
        ready: Callable[[], bool],
        registry: CollectorRegistry,
        unready_reason: Callable[[], str | None] = lambda: None,
    ) -> None:
        checks: dict[str, Callable[[], bool]] = {"/healthz": healthy, "/readyz": ready}

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # the stdlib's naming
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path == "/readyz" and (reason := unready_reason()) is not None:
                    body = json.dumps({"error": reason}).encode() + b"\n"
                    self._send(503, body, "application/json", {"Retry-After": "5"})
                elif path in checks:
                    ok = checks[path]()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"not ok\n", "text/plain")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(
                self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("probe %s", format % args)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="probes", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
