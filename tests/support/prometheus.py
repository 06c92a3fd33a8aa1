"""pytest plugin: a real Prometheus server (Debian's package) holding exactly the samples a test gives.

Register it from ``tests/conftest.py`` (``pytest_plugins = [..., "tests.support.prometheus"]``).

Samples with exact timestamps are written as OpenMetrics text and backfilled with
``promtool tsdb create-blocks-from openmetrics`` into a fresh data directory before Prometheus starts
on a free loopback port; Prometheus then answers queries over those blocks like over any other data
(there is nothing to scrape: the configuration has no targets). Tests evaluate their queries at a
fixed instant (`EVALUATION_TIME`) so that windows such as ``[5m]`` cover known samples exactly.

Fixtures
--------
``prometheus_with`` (session)
    A factory: ``prometheus_with(series) -> PrometheusServer``; every server it started is stopped
    at the end of the session.
``unreachable_prometheus_url`` (function)
    A loopback URL where nothing listens.

Missing binaries fail the test with the command that installs them (CI does).
"""

from __future__ import annotations

import ctypes
import math
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.tiers import require_marker
from tests.support.waiting import free_port

SETUP_HINT = "install it with `bash scripts/setup.sh --with-tools` (CI does)"
START_TIMEOUT = 60.0
# A whole minute, an hour back: the backfilled blocks lie in the past, clear of the head block
# Prometheus opens at start, and well within its default retention (15 days).
EVALUATION_TIME = float((int(time.time()) // 60) * 60 - 3600)

Point = tuple[float, float]  # (unix time in seconds, value)


@dataclass(frozen=True, slots=True)
class Series:
    metric: str
    labels: Mapping[str, str]
    points: tuple[Point, ...]


def steady(
    metric: str, labels: Mapping[str, str], value: float, *, span: float = 3600, step: float = 10
) -> Series:
    """A gauge holding `value` every `step` seconds from `span` seconds before EVALUATION_TIME to it."""
    count = int(span // step)
    return Series(
        metric, dict(labels), tuple((EVALUATION_TIME - i * step, value) for i in range(count, -1, -1))
    )


def rising(
    metric: str,
    labels: Mapping[str, str],
    per_second: float,
    *,
    start: float = 1000.0,
    span: float = 3600,
    step: float = 10,
) -> Series:
    """A counter growing by `per_second` every second, sampled every `step` seconds up to
    EVALUATION_TIME, and sampled exactly at both ends of any window that is a multiple of `step`:
    `rate()` over such a window needs no extrapolation and is `per_second` exactly."""
    count = int(span // step)
    return Series(
        metric,
        dict(labels),
        tuple(
            (EVALUATION_TIME - i * step, start + per_second * (count - i) * step)
            for i in range(count, -1, -1)
        ),
    )


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def openmetrics_text(series: Iterable[Series]) -> str:
    """The samples as OpenMetrics text: families grouped, each series' points contiguous, in time order."""
    lines: list[str] = []
    by_metric: dict[str, list[Series]] = {}
    for one in series:
        by_metric.setdefault(one.metric, []).append(one)
    for metric in sorted(by_metric):
        lines.append(f"# TYPE {metric} unknown")
        for one in by_metric[metric]:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(one.labels.items()))
            selector = f"{metric}{{{labels}}}" if labels else metric
            lines += [f"{selector} {_number(v)} {t:.3f}" for t, v in sorted(one.points)]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _binary(name: str) -> str:
    require_marker("tools", f"{name} (Debian's prometheus package, scripts/setup.sh --with-tools)")
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if found is None:
        pytest.fail(f"{name} is not installed: {SETUP_HINT}", pytrace=False)
    return found


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn asking Linux to SIGKILL the server if pytest dies without its teardown."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    arguments = (
        ctypes.c_ulong(1),
        ctypes.c_ulong(int(signal.SIGKILL)),
        ctypes.c_ulong(0),
    )  # PR_SET_PDEATHSIG

    def preexec() -> None:
        prctl(*arguments, ctypes.c_ulong(0), ctypes.c_ulong(0))

    return preexec


@dataclass
class PrometheusServer:
    url: str
    directory: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    def log_tail(self, lines: int = 30) -> str:
        text = (self.directory / "prometheus.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def _backfill(series: list[Series], directory: Path) -> Path:
    data = directory / "data"
    data.mkdir()
    if not series:
        return data
    source = directory / "samples.om"
    source.write_text(openmetrics_text(series), encoding="utf-8")
    done = subprocess.run(
        [_binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"promtool could not backfill {source}:\n{done.stdout}\n{done.stderr}")
    return data


class PortTaken(RuntimeError):
    """Another process bound the free port between our probe and Prometheus's start."""


def _wait_ready(server: PrometheusServer) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via *_proxy variables
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with opener.open(f"{server.url}/-/ready", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if server.process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            log = server.log_tail()
            failure = PortTaken if "address already in use" in log else RuntimeError
            raise failure(f"Prometheus did not become ready at {server.url}:\n{log}")
        time.sleep(0.1)


def _launch(binary: str, config: Path, data: Path, directory: Path) -> PrometheusServer:
    port = free_port()
    with (directory / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent(),  # noqa: PLW1509 - only calls prctl
        )
    server = PrometheusServer(f"http://127.0.0.1:{port}", directory, process)
    _wait_ready(server)
    return server


def start_prometheus(series: Iterable[Series], directory: Path, attempts: int = 3) -> PrometheusServer:
    """Backfill `series` into a new data directory under `directory`, start Prometheus on it."""
    binary = _binary("prometheus")
    data = _backfill(list(series), directory)
    config = directory / "prometheus.yml"
    config.write_text("global:\n  evaluation_interval: 1m\n", encoding="utf-8")
    for _ in range(attempts - 1):
        try:
            return _launch(binary, config, data, directory)
        except PortTaken:
            continue  # lost the race for the port: another one
    return _launch(binary, config, data, directory)


PrometheusFactory = Callable[[Iterable[Series]], PrometheusServer]


@pytest.fixture(scope="session")
def prometheus_with(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusFactory]:
    started: list[PrometheusServer] = []

    def start(series: Iterable[Series]) -> PrometheusServer:
        server = start_prometheus(series, tmp_path_factory.mktemp("prometheus"))
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def unreachable_prometheus_url() -> str:
    return f"http://127.0.0.1:{free_port()}"
