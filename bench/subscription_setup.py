"""What both subscription benchmarks set up and measure with (bench/subscriptions.py,
bench/subscription_contention.py): the example's tenants and their SaaS registry bodies, a bare
Git remote seeded with examples/cap-app and its records read back, the binding Secrets in a real
kube-apiserver, the token issuer, and the CPU seconds of processes read from /proc.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import math
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from btp_gitops.controller.kube import CONFIG_MAP, NAMESPACE, SECRET, KubeClient
from btp_gitops.controller.records import consumer_tenant_name

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cap-app"
APP_DIR = "apps/bookshop"  # where the example goes in the remote; new records go to <it>/tenants/
TENANTS_DIR = f"{APP_DIR}/tenants"
APP = "bookshop"  # the example's CAPApplication, in namespace bookshop
NAMESPACE_NAME = "bookshop"
PROVIDER_SUBACCOUNT = "0d3e5f6a-1b2c-4d5e-8f90-a1b2c3d4e5f6"  # examples/cap-app/capapplication.yaml
GLOBAL_ACCOUNT = "2dddd48d-b45f-45a5-b861-a80872a0c8a8"
XSAPPNAME = "bookshop!t42"
SUBSCRIPTION_DOMAIN = "shop.example.com"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "core.hooksPath",
    "GIT_CONFIG_VALUE_0": "/dev/null",
    "GIT_CONFIG_KEY_1": "commit.gpgSign",
    "GIT_CONFIG_VALUE_1": "false",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Tenant:
    tenant_id: str
    sub_domain: str
    subscription_guid: str

    @property
    def record_name(self) -> str:
        return consumer_tenant_name(APP, self.tenant_id)


def make_tenants(count: int, label: str) -> list[Tenant]:
    """`count` tenants with distinct ids, subdomains and record names (a record name keeps 8 hex of
    sha1(tenant id): the rare colliding id is skipped, the server would refuse it as taken)."""
    tenants: list[Tenant] = []
    names: set[str] = set()
    index = 0
    while len(tenants) < count:
        tenant_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"btp-gitops-bench/{label}/{index}"))
        tenant = Tenant(tenant_id, f"{label}-{index:05d}", str(uuid.uuid5(uuid.NAMESPACE_OID, tenant_id)))
        index += 1
        if tenant.record_name not in names:
            names.add(tenant.record_name)
            tenants.append(tenant)
    return tenants


def saas_body(tenant: Tenant) -> bytes:
    """What the SaaS registry sends on subscribe (asynchronous, as the binding's appUrls configure)."""
    return json.dumps(
        {
            "subscriptionAppName": APP,
            "subscriptionAppId": f"{XSAPPNAME}",
            "subscribedTenantId": tenant.tenant_id,
            "subscribedSubdomain": tenant.sub_domain,
            "subscriptionGUID": tenant.subscription_guid,
            "globalAccountGUID": GLOBAL_ACCOUNT,
            "providerSubaccountId": PROVIDER_SUBACCOUNT,
            "subscribedSubaccountId": str(uuid.uuid5(uuid.NAMESPACE_DNS, tenant.tenant_id)),
            "subscribedZoneId": tenant.tenant_id,
            "subscribedLicenseType": "PRODUCTIVE",
            "subscribedCrmId": "",
            "userId": "admin@example.com",
            "eventType": "CREATE",
            "subscriptionParams": {},
            "additionalInformation": {"subaccountRegion": "eu10"},
            "dependantServiceInstanceAppIds": None,
        },
        separators=(",", ":"),
    ).encode()


def git(directory: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=directory,
        env={**os.environ, **GIT_ENV},
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {directory}: {done.stderr.strip()}")
    return done.stdout


def seed_remote(directory: Path) -> tuple[Path, str]:
    """A bare remote whose main branch holds examples/cap-app under APP_DIR; (remote, seed commit)."""
    directory.mkdir(parents=True)
    remote = directory / "remote.git"
    git(directory, "init", "--quiet", "--bare", "--initial-branch=main", str(remote))
    seed = directory / "seed"
    git(directory, "clone", "--quiet", str(remote), str(seed))
    shutil.copytree(EXAMPLE, seed / APP_DIR)
    git(seed, "add", "--all")
    git(seed, "commit", "--quiet", "-m", "Seed: examples/cap-app")
    git(seed, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    shutil.rmtree(seed)
    return remote, git(remote, "rev-parse", "refs/heads/main").strip()


@dataclass(slots=True)
class RemoteRecords:
    commits: int  # added on main since the seed
    new_files: int  # tenant record files not in the seed
    lost: int  # expected tenant ids without a record
    duplicated: int  # expected tenant ids with more than one record
    unexpected: int  # records of tenant ids nobody subscribed

    @property
    def complete(self) -> bool:
        return not (self.lost or self.duplicated or self.unexpected)


def remote_records(remote: Path, seed: str, expected: list[Tenant]) -> RemoteRecords:
    """The remote's main branch against the expected tenants, file by file."""
    commits = int(git(remote, "rev-list", "--count", f"{seed}..refs/heads/main"))
    listed = set(git(remote, "ls-tree", "-r", "--name-only", "refs/heads/main", "--", TENANTS_DIR).split())
    seeded = set(git(remote, "ls-tree", "-r", "--name-only", seed, "--", TENANTS_DIR).split())
    new = sorted(listed - seeded)
    ids: Counter[str] = Counter()
    if new:
        batch = git(remote, "cat-file", "--batch", stdin="".join(f"refs/heads/main:{p}\n" for p in new))
        for text in _batch_contents(batch):
            for document in yaml.safe_load_all(text):
                if isinstance(document, dict) and document.get("kind") == "CAPTenant":
                    ids[str((document.get("spec") or {}).get("tenantId"))] += 1
    wanted = {t.tenant_id for t in expected}
    return RemoteRecords(
        commits=commits,
        new_files=len(new),
        lost=sum(1 for t in wanted if ids[t] == 0),
        duplicated=sum(1 for t in wanted if ids[t] > 1),
        unexpected=sum(count for t, count in ids.items() if t not in wanted),
    )


def _batch_contents(output: str) -> Iterator[str]:
    """The blobs of `git cat-file --batch` output (header line, content, newline per object)."""
    data = output.encode()
    position = 0
    while position < len(data):
        header_end = data.index(b"\n", position)
        size = int(data[position:header_end].split()[2])
        yield data[header_end + 1 : header_end + 1 + size].decode()
        position = header_end + 1 + size + 1


def string_secret(name: str, data: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE_NAME},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def create_bindings(kube: KubeClient) -> None:
    """The namespace and the two binding Secrets a SaaS registry subscribe reads, in the shapes the
    SAP BTP service operator writes (xsuaa: a `credentials` JSON key; saas-registry: SAP binding
    format with `.metadata`). The registry's URLs are never called during a subscribe."""
    kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE_NAME}})
    xsuaa = {
        "xsappname": XSAPPNAME,
        "uaadomain": "localhost",
        "clientid": f"sb-{XSAPPNAME}",
        "clientsecret": uuid.uuid4().hex,
        "url": "https://provider.localhost",
    }
    registry = {
        "clientid": "sb-bookshop!b7",
        "clientsecret": uuid.uuid4().hex,
        "url": "https://provider.localhost",
        "saas_registry_url": "https://saas-manager.localhost",
        "uaadomain": "localhost",
        "appUrls": json.dumps({"callbackTimeoutMillis": 300000, "onSubscriptionAsync": True}),
    }
    metadata = {
        "credentialProperties": [{"name": k, "format": "text"} for k in registry],
        "metaDataProperties": [{"name": "instance_name", "format": "text"}],
    }
    for secret in (
        string_secret(f"{APP}-uaa-binding", {"credentials": json.dumps(xsuaa)}),
        string_secret(
            f"{APP}-registry-binding",
            {**registry, "instance_name": f"{APP}-registry", ".metadata": json.dumps(metadata)},
        ),
    ):
        kube.create(SECRET, secret, NAMESPACE_NAME)


def cluster_objects(kube: KubeClient) -> tuple[int, int]:
    """(subscription-context Secrets, pending-callback ConfigMaps) the server wrote."""
    secrets = kube.list(SECRET, NAMESPACE_NAME, "app.kubernetes.io/managed-by=btp-gitops")
    callbacks = kube.list(CONFIG_MAP, NAMESPACE_NAME, "btp-gitops.io/pending-callback=true")
    return len(secrets), len(callbacks)


_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # after "pid (comm) "


def process_cpu(pid: int) -> float:
    """CPU seconds of `pid` and of its children it waited for (the server's git commands)."""
    fields = _stat_fields(pid)
    return sum(int(v) for v in fields[11:15]) / _TICKS if fields else 0.0


def child_pids_named(*names: str) -> dict[str, int]:
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        try:
            comm = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if fields and int(fields[1]) == os.getpid() and comm in names:
            found[comm] = int(entry.name)
    return found


def cpu_snapshot(server_pid: int, others: Mapping[str, int]) -> dict[str, float]:
    times = os.times()
    snapshot = {"server": process_cpu(server_pid), "clients": times.user + times.system}
    snapshot.update({name: process_cpu(pid) for name, pid in others.items()})
    return snapshot


def wait_ready(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        finally:
            connection.close()
        if time.monotonic() > deadline:
            raise RuntimeError("the subscription server did not become ready")
        time.sleep(0.1)


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest rank: the smallest value with at least `fraction` of the values at or below it."""
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(slots=True)
class Environment:
    """What the run needs besides the server: the cluster, the token issuer, the CA of its certificate."""

    kube: KubeClient
    kubeconfig: Path
    sign: Callable[[], str]
    jwks_ca_file: Path


def set_up(work: Path, stack: contextlib.ExitStack) -> Environment:
    from tests.controller.subscription.peers import (  # noqa: PLC0415 (test support, bench only)
        Issuer,
        TokenFactory,
        make_pki,
        rsa_key,
        running_issuer,
    )
    from tests.support.kubeapi import start_kube_api  # noqa: PLC0415

    started = time.perf_counter()
    api, stop_api = start_kube_api(work / "kube-api")
    stack.callback(stop_api)
    kube = KubeClient(api.api_client())
    stack.callback(kube.close)
    create_bindings(kube)
    log(f"setup: kube-apiserver + etcd with binding Secrets in {time.perf_counter() - started:.1f} s")
    pki = make_pki(work)
    issuer = stack.enter_context(running_issuer(Issuer({"key-1": rsa_key()}), pki.server_context(work)))
    return Environment(kube, api.kubeconfig, TokenFactory(issuer, XSAPPNAME), pki.ca_file)
