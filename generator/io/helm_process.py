"""The parent's side of chart rendering in a child process under limits (see io.chart_limits).

The embedded engine runs in one long-lived worker (io.helm_worker) per set of limits, started on
the first chart and reused for every later one: a chart costs one pipe round trip, not a process
start and a load of the Go library (render-twice renders each chart twice). The `helm` CLI engine
runs each chart as its own process, started through the same module so the kernel's limits are in
place before the binary runs.

Whatever the child does, the parent reads at most what the limits allow, waits at most the
wall-clock timeout, and turns each way the child can end into a `ChartRenderFailed` naming the
chart and the limit: no traceback, exit 4.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import btp_gitops
from btp_gitops.generator.core.errors import ChartNotFound, ChartRenderFailed
from btp_gitops.generator.io.chart_limits import MIB, ChartLimits
from btp_gitops.generator.io.helm_worker import EXIT_MEMORY, EXIT_NOT_RUN, HEADER

# The child runs isolated (-I): no PYTHON* variable, no user site, and above all not the working
# directory on sys.path (in Argo CD's plugin that is the checked-out repository, whose files must
# not be importable). It finds btp-gitops and the engine where this process found them.
_BOOT = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "from btp_gitops.generator.io.helm_worker import main; main(sys.argv[2:])"
)
_STDERR_TAIL = 64 * 1024


def _module_path() -> str:
    # Not resolved: in an editable install the package's files link into the checkout, where the
    # folders are not laid out as the package (pyproject.toml's package-dir); its tree here is.
    package_parent = str(Path(btp_gitops.__file__).absolute().parents[1])
    return json.dumps([package_parent, *(entry for entry in sys.path if entry and entry != package_parent)])


def worker_command(mode: str, limits: ChartLimits, *extra: str) -> list[str]:
    numbers = (limits.memory_mib, limits.cpu_seconds, limits.output_mib)
    return [sys.executable, "-I", "-c", _BOOT, _module_path(), mode, *map(str, numbers), *extra]


def _child_environment() -> dict[str, str]:
    # GOTRACEBACK=none: a Go fatal error (out of memory) prints one line, not every goroutine.
    # MALLOC_ARENA_MAX: glibc reserves 64 MiB of address space per thread that mallocs, which
    # would count against RLIMIT_AS on a machine with many cores.
    return {**os.environ, "GOTRACEBACK": "none", "MALLOC_ARENA_MAX": "2"}


def _tail(stream: IO[bytes]) -> str:
    stream.seek(0, os.SEEK_END)
    stream.seek(max(0, stream.tell() - _STDERR_TAIL))
    return stream.read().decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no message"


def _ran_out_of_memory(returncode: int, stderr: str) -> bool:
    """Go ends with "fatal error: runtime: out of memory" when RLIMIT_AS refuses its heap (exit 2
    in a program, SIGABRT in a library); Python raises MemoryError, which the worker turns into
    EXIT_MEMORY."""
    text = stderr.lower()
    return returncode == EXIT_MEMORY or (
        returncode != 0 and ("out of memory" in text or "cannot allocate memory" in text)
    )


def why_it_ended(limits: ChartLimits, returncode: int, stderr: str) -> str:
    """Which limit a child overran, from how it ended."""
    if _ran_out_of_memory(returncode, stderr):
        return limits.memory_message()
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # SIGKILL: the hard CPU limit (helm CLI)
        return limits.cpu_message()
    if returncode == -signal.SIGXFSZ:
        return limits.output_message()
    if returncode < 0:
        return f"the Helm engine was ended by signal {signal.Signals(-returncode).name}"
    return f"the Helm engine stopped unexpectedly (exit status {returncode}): {_last_line(stderr)}"


class _Ended(Exception):
    """The worker is gone; `reason` says which limit (or what else) ended it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HelmWorker:
    """One long-lived child that renders charts with the embedded engine, one request at a time."""

    def __init__(self, limits: ChartLimits) -> None:
        self.limits = limits
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._stderr_seen = 0
        self._lock = threading.Lock()

    def render(self, request: dict[str, Any], describe: str) -> dict[str, Any]:
        """The worker's `ok` reply for `request`; raises ChartRenderFailed/ChartNotFound otherwise.
        `describe` names the chart in messages ("chart charts/x (requested by ...)")."""
        line = json.dumps(request).encode() + b"\n"
        with self._lock:
            try:
                reply = self._exchange(line)
            except _Ended as ended:
                raise ChartRenderFailed(f"{describe}: {ended.reason}") from None
        if "ok" in reply:
            return dict(reply["ok"])
        if reply.get("error") == "output":
            raise ChartRenderFailed(f"{describe}: {self.limits.output_message()}")
        if reply.get("error") == "load":
            raise ChartNotFound(f"cannot load {describe}: {reply.get('message', '')}")
        raise ChartRenderFailed(f"{describe} failed to render: {reply.get('message', '')}")

    def _exchange(self, line: bytes) -> dict[str, Any]:
        process = self._started()
        deadline = time.monotonic() + self.limits.timeout_seconds
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(line)
            process.stdin.flush()
        except BrokenPipeError:
            raise self._ended(process) from None
        header = self._read(process.stdout.fileno(), HEADER.size, deadline, process)
        (length,) = HEADER.unpack(header)
        if length > 8 * self.limits.output_mib * MIB + MIB:  # JSON-escaped output, past the worker's cap
            self._stop()
            raise _Ended(self.limits.output_message())
        body = self._read(process.stdout.fileno(), length, deadline, process)
        self._forward_stderr()
        reply: dict[str, Any] = json.loads(body)
        return reply

    def _read(self, fd: int, count: int, deadline: float, process: subprocess.Popen[bytes]) -> bytes:
        chunks: list[bytes] = []
        missing = count
        while missing:
            remaining = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(remaining, 0))[0] if remaining > 0 else []
            if not ready:
                self._stop()
                raise _Ended(self.limits.timeout_message())
            chunk = os.read(fd, min(missing, MIB))
            if not chunk:
                raise self._ended(process)
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
            self._stderr_seen = 0
            self._process = subprocess.Popen(
                worker_command("serve", self.limits),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=_child_environment(),
                bufsize=0,
            )
            _live_workers.add(self)
        return self._process

    def _ended(self, process: subprocess.Popen[bytes]) -> _Ended:
        returncode = process.wait()
        stderr = _tail(self._stderr) if self._stderr is not None else ""
        self._discard()
        return _Ended(why_it_ended(self.limits, returncode, stderr))

    def _forward_stderr(self) -> None:
        """What the engine logged (Helm's warnings), passed on as the in-process engine did."""
        if self._stderr is None:
            return
        self._stderr.seek(self._stderr_seen)
        logged = self._stderr.read(_STDERR_TAIL)
        self._stderr_seen = self._stderr.seek(0, os.SEEK_END)
        if logged:
            sys.stderr.write(logged.decode("utf-8", errors="replace"))

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        self._discard()

    def _discard(self) -> None:
        if self._process is not None:
            for stream in (self._process.stdin, self._process.stdout):
                if stream is not None:
                    stream.close()
        if self._stderr is not None:
            self._stderr.close()
        self._process, self._stderr = None, None
        _live_workers.discard(self)

    def close(self) -> None:
        """End the worker: it leaves when its stdin closes; killed if it does not within a second."""
        with self._lock:
            process = self._process
            if process is None:
                return
            if process.stdin is not None:
                process.stdin.close()
            try:
                process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self._discard()


_live_workers: set[HelmWorker] = set()
_shared: dict[ChartLimits, HelmWorker] = {}
_shared_lock = threading.Lock()


def shared_worker(limits: ChartLimits) -> HelmWorker:
    """The process's worker for these limits (engines built with the same limits share it)."""
    with _shared_lock:
        worker = _shared.get(limits)
        if worker is None:
            worker = _shared[limits] = HelmWorker(limits)
        return worker


@atexit.register
def _close_workers() -> None:
    for worker in list(_live_workers):
        worker.close()


def run_helm_cli(command: list[str], limits: ChartLimits, describe: str) -> tuple[str, str]:
    """`helm template ...` under the limits: (stdout, stderr) when it exits 0; otherwise
    ChartRenderFailed naming the limit it overran, or helm's own message."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(
            worker_command("exec-helm", limits, *command),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            env=_child_environment(),
        )
        try:
            returncode = process.wait(timeout=limits.timeout_seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise ChartRenderFailed(f"{describe}: {limits.timeout_message()}") from None
        size = stdout.seek(0, os.SEEK_END)
        if size >= limits.output_mib * MIB:
            raise ChartRenderFailed(f"{describe}: {limits.output_message()}")
        if returncode == EXIT_NOT_RUN:
            raise ChartRenderFailed(f"helm CLI not found: {command[0]}")
        if returncode != 0:
            message = _tail(stderr)
            if returncode < 0 or _ran_out_of_memory(returncode, message):
                raise ChartRenderFailed(f"{describe}: {why_it_ended(limits, returncode, message)}")
            raise ChartRenderFailed(f"{describe} failed to render with {command[0]}: {message.strip()}")
        return _read_all(stdout), _read_all(stderr)


def _read_all(stream: IO[bytes]) -> str:
    stream.seek(0)
    return stream.read().decode("utf-8", errors="replace")
