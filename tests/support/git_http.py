"""A Git remote served over HTTP on 127.0.0.1 that tests can make misbehave.

Real Git on both sides: requests go to `git http-backend` (the CGI that ships with Git), run once
per request behind a small threaded HTTP server. What a test can do to it:

- `hang()`: every new request is accepted and never answered (a hung remote, as a stopped process
  or a black-holing proxy looks to a client) until `serve()`;
- `lose_push_ack()`: a push (receive-pack POST) is passed to Git, so it lands, and then its
  answer is withheld until `serve()`; with `hang_after=True` every later request hangs too (the
  remote cannot be asked whether the push landed);
- `hang_pushes()`: a push is withheld before Git sees it (it never lands);
- `close()` / `reopen()`: nothing listens on the port (connection refused), then the same port
  serves again.

`url(user_info)` puts credentials into the URL (the backend ignores them) for masking tests.
`require_basic_auth(username, password)` makes it a private remote: a request without those
credentials (HTTP basic auth) is answered 401 with a `WWW-Authenticate: Basic` challenge, as a Git
host answers for a private repository, and counted in `refused`.
"""

from __future__ import annotations

import base64
import hmac
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HELD_AT_MOST = 60.0  # a held request is let go after this even if the test never releases it


def _git_http_backend() -> str:
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout
    return str(Path(exec_path.strip()) / "git-http-backend")


class GitHttpRemote:
    """Serves the bare repositories under `root` (`root/<name>.git`) at `http://127.0.0.1:<port>/`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._backend = _git_http_backend()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._mode = "serve"
        self._hang_after_push = False
        self.pushes_landed = 0
        self.held = 0  # requests held so far
        self.refused = 0  # requests answered 401 (see require_basic_auth)
        self._authorization: bytes | None = None
        self._server = self._listen(0)
        self.port = int(self._server.server_address[1])
        self._thread = self._run(self._server)

    # --- what the test does -----------------------------------------------------------------------

    def url(self, repository: str = "remote.git", user_info: str = "") -> str:
        at = f"{user_info}@" if user_info else ""
        return f"http://{at}127.0.0.1:{self.port}/{repository}"

    def serve(self, *, release: bool = True) -> None:
        """Answer new requests again; with `release`, let every held one go (unanswered), else they
        stay held until the client gives up."""
        with self._lock:
            self._mode = "serve"
            self._hang_after_push = False
            if release:
                self._release.set()
                self._release = threading.Event()

    def hang(self) -> None:
        with self._lock:
            self._mode = "hang"

    def require_basic_auth(self, username: str, password: str) -> None:
        """Answer only requests that carry these credentials (HTTP basic auth) from now on."""
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        with self._lock:
            self._authorization = f"Basic {token}".encode()

    def lose_push_ack(self, *, hang_after: bool = False) -> None:
        with self._lock:
            self._mode = "lose-push-ack"
            self._hang_after_push = hang_after

    def hang_pushes(self) -> None:
        with self._lock:
            self._mode = "hang-pushes"

    def close(self) -> None:
        """Stop listening: connections to the port are refused."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def reopen(self) -> None:
        self._server = self._listen(self.port)
        self._thread = self._run(self._server)

    def stop(self) -> None:
        self.serve()
        self.close()

    # --- serving ----------------------------------------------------------------------------------

    def _listen(self, port: int) -> ThreadingHTTPServer:
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection: nothing to keep in step

            def do_GET(self) -> None:  # the stdlib's naming
                remote._handle(self)

            def do_POST(self) -> None:
                remote._handle(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        server.daemon_threads = True
        return server

    @staticmethod
    def _run(server: ThreadingHTTPServer) -> threading.Thread:
        thread = threading.Thread(target=server.serve_forever, name="git-http-remote", daemon=True)
        thread.start()
        return thread

    def _hold(self, release: threading.Event) -> None:
        with self._lock:
            self.held += 1
        release.wait(HELD_AT_MOST)

    def _authorized(self, request: BaseHTTPRequestHandler) -> bool:
        with self._lock:
            expected = self._authorization
        if expected is None:
            return True
        given = request.headers.get("Authorization", "").encode("latin-1", "replace")
        if hmac.compare_digest(given, expected):
            return True
        with self._lock:
            self.refused += 1
        self._body(request)  # read what the client sent before answering
        payload = b"authentication required\n"
        request.send_response(401)
        request.send_header("WWW-Authenticate", 'Basic realm="git"')
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)
        return False

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        if not self._authorized(request):
            return
        with self._lock:
            mode, release = self._mode, self._release
        is_push = request.command == "POST" and request.path.split("?")[0].endswith("/git-receive-pack")
        if mode == "hang" or (mode == "hang-pushes" and is_push):
            self._hold(release)
            return
        body = self._body(request)
        status, headers, payload = self._cgi(request, body)
        if is_push and mode == "lose-push-ack":
            with self._lock:
                self.pushes_landed += 1
                if self._hang_after_push:
                    self._mode = "hang"
            self._hold(release)
            return
        request.send_response(status)
        for name, value in headers:
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    @staticmethod
    def _body(request: BaseHTTPRequestHandler) -> bytes:
        if request.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(request.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    request.rfile.readline()
                    return b"".join(parts)
                parts.append(request.rfile.read(size))
                request.rfile.readline()
        return request.rfile.read(int(request.headers.get("Content-Length") or 0))

    def _cgi(self, request: BaseHTTPRequestHandler, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
        path, _, query = request.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": request.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": request.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_USER": "tester",  # receive-pack over HTTP needs an authenticated user
            "REMOTE_ADDR": "127.0.0.1",
        }
        if request.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = request.headers["Content-Encoding"]
        if request.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = request.headers["Git-Protocol"]
        done = subprocess.run([self._backend], input=body, env=env, capture_output=True, check=False)
        head, separator, payload = done.stdout.partition(b"\r\n\r\n")
        if not separator:  # the backend ends its header lines with "\r\n", its own errors may not
            head, _, payload = done.stdout.partition(b"\n\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name.strip(), value.strip()))
        return status, headers, payload
