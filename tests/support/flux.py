"""Flux's source-controller and kustomize-controller, run as processes against a test API server.

Both are built from their Go modules by ``scripts/build-tools.sh`` (tools ``source-controller`` and
``kustomize-controller``). :func:`start_flux` starts them with the API server's admin kubeconfig,
on free loopback ports: source-controller keeps its artifacts (the tarballs of fetched commits)
under a directory of the test and serves them on 127.0.0.1, where kustomize-controller downloads
them. Neither runs leader election, and dependency requeues are short so a test does not wait
Flux's default 30 s between the stages of an app.

The CRDs the controllers need are every kind they watch: the pinned Flux CRDs
(``scripts/fetch-crds.sh``: Kustomization, GitRepository, OCIRepository) and the kinds only
source-controller serves (Bucket, HelmRepository, HelmChart, ExternalArtifact), which
build-tools.sh copies beside its binary from the same module version.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.crds import load_crds, third_party_crd_files
from tests.support.kubeapi import KubeAPI, _Process
from tests.support.tools import tool_path
from tests.support.waiting import free_port

FLUX_NAMESPACE = "flux-system"
START_TIMEOUT = 90.0  # seconds for both controllers to report ready
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def flux_crds() -> list[dict[str, Any]]:
    """The pinned Flux CRDs and, for the kinds they lack, source-controller's own."""
    pinned = load_crds(third_party_crd_files("flux"))
    names = {crd["metadata"]["name"] for crd in pinned}
    bundled = sorted((tool_path("source-controller").parent / "crds").glob("*.yaml"))
    extra = [crd for crd in load_crds(bundled) if crd["metadata"]["name"] not in names]
    return [*pinned, *extra]


@dataclass(frozen=True)
class FluxControllers:
    """The running controllers; `logs()` is what a failing test shows."""

    source: _Process
    kustomize: _Process
    storage: Path

    def logs(self) -> str:
        return "\n".join(process.describe() for process in (self.source, self.kustomize))

    def running(self) -> bool:
        return self.source.running() and self.kustomize.running()


def controller_log_about(log_path: Path, name: str, count: int = 12) -> list[str]:
    """The last `count` entries a controller logged about the object `name` (its JSON log lines,
    events and debug chatter left out), as `time message [error]`: what a test that gave up
    waiting for that object shows."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError as exc:
        return [f"<cannot read {log_path}: {exc}>"]
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("name") != name or entry.get("logger") == "events":
            continue
        if entry.get("level") == "debug":
            continue
        revision = f" ({entry['revision']})" if entry.get("revision") else ""
        error = f" [{entry['error']}]" if entry.get("error") else ""
        entries.append(f"{entry.get('ts')} {entry.get('msg')}{revision}{error}")
    return entries[-count:] or [f"<nothing logged about {name} in {log_path}>"]


def _environment(kube: KubeAPI) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in _PROXY_VARIABLES}
    env["KUBECONFIG"] = str(kube.kubeconfig)
    env["RUNTIME_NAMESPACE"] = FLUX_NAMESPACE
    return env


def _wait_ready(controllers: FluxControllers, health: dict[str, int]) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + START_TIMEOUT
    pending = dict(health)
    while pending:
        for name, port in list(pending.items()):
            try:
                with opener.open(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply:
                    if reply.status == 200:
                        del pending[name]
            except (urllib.error.URLError, OSError):
                pass
        if not controllers.running():
            raise RuntimeError(f"a Flux controller exited while starting:\n{controllers.logs()}")
        if pending and time.monotonic() > deadline:
            raise RuntimeError(
                f"{', '.join(pending)} not ready on /readyz after {START_TIMEOUT:g}s:\n{controllers.logs()}"
            )
        time.sleep(0.2)


@contextmanager
def running_flux(kube: KubeAPI, work_dir: Path, requeue_dependency: str = "1s") -> Iterator[FluxControllers]:
    """Start source-controller and kustomize-controller against `kube`; stop them on exit."""
    work_dir.mkdir(parents=True, exist_ok=True)
    storage = work_dir / "artifacts"
    storage.mkdir(exist_ok=True)
    env = _environment(kube)
    storage_port = free_port()
    health = {"source-controller": free_port(), "kustomize-controller": free_port()}
    common = ["--enable-leader-election=false", "--watch-all-namespaces=true", "--log-level=debug"]
    source_argv = [
        str(tool_path("source-controller")),
        *common,
        "--metrics-addr=0",
        f"--health-addr=127.0.0.1:{health['source-controller']}",
        f"--storage-path={storage}",
        f"--storage-addr=127.0.0.1:{storage_port}",
        f"--storage-adv-addr=127.0.0.1:{storage_port}",
    ]
    kustomize_argv = [
        str(tool_path("kustomize-controller")),
        *common,
        "--metrics-addr=0",
        f"--health-addr=127.0.0.1:{health['kustomize-controller']}",
        f"--requeue-dependency={requeue_dependency}",
    ]
    started: list[_Process] = []
    try:
        started.append(
            _Process("source-controller", source_argv, work_dir / "source-controller.log", work_dir, env)
        )
        started.append(
            _Process(
                "kustomize-controller", kustomize_argv, work_dir / "kustomize-controller.log", work_dir, env
            )
        )
        controllers = FluxControllers(started[0], started[1], storage)
        _wait_ready(controllers, health)
        yield controllers
    finally:
        for process in reversed(started):
            process.stop()
