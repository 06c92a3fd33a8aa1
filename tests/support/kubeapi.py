"""pytest plugin: a real kube-apiserver backed by a real etcd.

Register it from ``tests/conftest.py``::

    pytest_plugins = ["tests.support.kubeapi"]

Fixtures
--------
``kube_api`` (session)
    Starts etcd and kube-apiserver (built by ``scripts/build-tools.sh``) on free
    loopback ports with a throw-away PKI and yields a :class:`KubeAPI`.
``kube_namespace`` (function)
    Creates a uniquely named namespace, yields its name and deletes it after
    the test.

Helper
------
:func:`install_crds` creates or updates CustomResourceDefinitions and waits
until each one is Established.

There is no controller-manager, scheduler or kubelet: objects are stored and
validated by the real API server, but nothing reconciles them. Namespaces that
are deleted stay ``Terminating`` forever (the namespace controller would finish
them), and Pods are never scheduled.

Environment knobs: ``BTP_KUBE_API_START_TIMEOUT`` (seconds, default 120) bounds
how long startup may take.
"""

from __future__ import annotations

import base64
import copy
import ctypes
import datetime as dt
import ipaddress
import json
import os
import re
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tests.support.tools import tool_path

__all__ = [
    "KubeAPI",
    "KubeAPIStartError",
    "install_crds",
    "kube_api",
    "kube_namespace",
]

ADMIN_USER = "btp-gitops-test-admin"
ADMIN_GROUP = "system:masters"
NAMESPACE_LABEL = "btp-gitops.test/fixture"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# Admission plugins that are on by default but depend on controllers that are
# not running here (there is no kube-controller-manager):
# - ServiceAccount: rejects Pods until the "default" ServiceAccount exists in
#   the namespace, and only the serviceaccount controller creates it.
# - ResourceQuota: rejects objects counted by a ResourceQuota until the quota
#   controller has filled in the quota's status.
# - StorageObjectInUseProtection: adds protection finalizers to PVCs/PVs that
#   only the pvc/pv-protection controllers ever remove.
# Everything else (NamespaceLifecycle, PodSecurity, validating/mutating
# admission policies and webhooks, ...) stays enabled.
DISABLED_ADMISSION_PLUGINS = ("ServiceAccount", "ResourceQuota", "StorageObjectInUseProtection")

_LOG_TAIL_LINES = 40
_STOP_GRACE_SECONDS = 15.0


class KubeAPIStartError(RuntimeError):
    """etcd or kube-apiserver did not come up."""


@dataclass(frozen=True)
class KubeAPI:
    """Connection details of the running test API server."""

    server: str
    kubeconfig: Path
    ca_file: Path
    client_cert_file: Path
    client_key_file: Path
    etcd_url: str
    work_dir: Path

    def configuration(self) -> k8s.Configuration:
        """A client configuration authenticating as the admin user."""
        cfg = k8s.Configuration(
            host=self.server,
            ssl_ca_cert=str(self.ca_file),
            cert_file=str(self.client_cert_file),
            key_file=str(self.client_key_file),
            verify_ssl=True,
        )
        # Loopback traffic must never be sent to an HTTP(S)_PROXY from the
        # environment; the setter also stops re-reading proxies from it.
        cfg.proxy = None
        return cfg

    def api_client(self) -> k8s.ApiClient:
        """A new ApiClient for this server; close it (or use ``with``)."""
        return k8s.ApiClient(self.configuration())

    def env(self) -> dict[str, str]:
        """``os.environ`` plus ``KUBECONFIG`` pointing at this server, for tools
        such as helm that are run as subprocesses."""
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env


# --------------------------------------------------------------------------
# PKI


@dataclass(frozen=True)
class _PKI:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    sa_key: Path
    sa_pub: Path
    admin_cert: Path
    admin_key: Path


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    path.chmod(mode)
    return path


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _generate_pki(directory: Path) -> _PKI:
    """A CA, a serving cert for 127.0.0.1/localhost, a service-account signing
    key and an admin client cert in group system:masters (all ECDSA P-256)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC)
    not_before = now - dt.timedelta(hours=1)
    not_after = now + dt.timedelta(days=2)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "btp-gitops-test-ca")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski)

    def leaf(
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None = None,
    ) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(ca_aki, critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    serving_key, serving_cert = leaf(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        ExtendedKeyUsageOID.SERVER_AUTH,
        [
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            # In-cluster names of the kubernetes Service, for completeness.
            x509.DNSName("kubernetes"),
            x509.DNSName("kubernetes.default"),
            x509.DNSName("kubernetes.default.svc"),
        ],
    )
    # The API server maps a client certificate's CN to the user name and each
    # O to a group; system:masters bypasses authorization entirely.
    admin_key, admin_cert = leaf(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, ADMIN_GROUP),
                x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
            ]
        ),
        ExtendedKeyUsageOID.CLIENT_AUTH,
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())

    return _PKI(
        ca_cert=_write(directory / "ca.crt", _cert_pem(ca_cert), 0o644),
        serving_cert=_write(directory / "apiserver.crt", _cert_pem(serving_cert), 0o644),
        serving_key=_write(directory / "apiserver.key", _key_pem(serving_key)),
        sa_key=_write(directory / "sa.key", _key_pem(sa_key)),
        sa_pub=_write(
            directory / "sa.pub",
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            0o644,
        ),
        admin_cert=_write(directory / "admin.crt", _cert_pem(admin_cert), 0o644),
        admin_key=_write(directory / "admin.key", _key_pem(admin_key)),
    )


def _write_kubeconfig(path: Path, server: str, pki: _PKI) -> Path:
    """A self-contained kubeconfig (certificates embedded), usable by helm etc."""

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode("ascii")

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "btp-gitops-test",
                "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": ADMIN_USER,
                "user": {
                    "client-certificate-data": b64(pki.admin_cert),
                    "client-key-data": b64(pki.admin_key),
                },
            }
        ],
        "contexts": [
            {
                "name": "btp-gitops-test",
                "context": {"cluster": "btp-gitops-test", "user": ADMIN_USER},
            }
        ],
        "current-context": "btp-gitops-test",
        "preferences": {},
    }
    return _write(path, yaml.safe_dump(doc, sort_keys=False).encode())


# --------------------------------------------------------------------------
# processes


def _free_ports(count: int) -> list[int]:
    """Ports the kernel considers free right now (all distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _parent_death_signal() -> Callable[[], None] | None:
    """A preexec_fn making the child receive SIGKILL if pytest dies without
    running fixture teardown (e.g. SIGKILL from a CI timeout), so no orphaned
    etcd/kube-apiserver keeps running. SIGKILL rather than SIGTERM: both
    children get the signal at once, and kube-apiserver's graceful shutdown
    hangs once etcd is gone; the data is throw-away anyway. Linux only;
    elsewhere None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    # prctl(2) takes unsigned longs; pass them as such (a plain int would be a
    # 32-bit argument to the variadic function).
    ulong = ctypes.c_ulong
    args = (ulong(1), ulong(int(signal.SIGKILL)), ulong(0), ulong(0), ulong(0))  # PR_SET_PDEATHSIG

    def preexec() -> None:
        prctl(*args)

    return preexec


class _Process:
    """A child process whose combined output goes to a log file."""

    def __init__(
        self, name: str, argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.popen = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_parent_death_signal(),  # noqa: PLW1509 - only calls prctl
            )

    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<cannot read {self.log_path}: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def describe(self) -> str:
        rc = self.popen.poll()
        state = "running" if rc is None else f"exited with code {rc}"
        return (
            f"--- {self.name} ({state}); log {self.log_path}; last {_LOG_TAIL_LINES} lines:\n"
            f"{self.log_tail()}"
        )

    def stop(self) -> None:
        """Terminate, then kill if it does not exit in time."""
        if self.popen.poll() is not None:
            return
        self.popen.terminate()
        try:
            self.popen.wait(timeout=_STOP_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(timeout=_STOP_GRACE_SECONDS)


def _opener(ssl_context: ssl.SSLContext | None = None) -> urllib.request.OpenerDirector:
    # An empty ProxyHandler: never route loopback probes via *_proxy env vars.
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if ssl_context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=ssl_context))
    return urllib.request.build_opener(*handlers)


def _probe(opener: urllib.request.OpenerDirector, url: str) -> tuple[int | None, str]:
    """(HTTP status or None if unreachable, body or error text)."""
    try:
        with opener.open(url, timeout=5) as resp:
            return resp.status, resp.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        return None, str(exc)


def _wait_until(
    what: str,
    url: str,
    opener: urllib.request.OpenerDirector,
    ok: Callable[[int | None, str], bool],
    procs: Sequence[_Process],
    deadline: float,
) -> None:
    last = "(no response yet)"
    while True:
        status, body = _probe(opener, url)
        if ok(status, body):
            return
        if status is None:
            last = body
        else:
            # A failing /readyz lists every check; keep only the failing ones.
            failing = [line for line in body.splitlines() if line.startswith("[-]")]
            last = f"HTTP {status}: " + ("\n".join(failing) if failing else body.strip())
        dead = [p for p in procs if not p.running()]
        if dead:
            raise _start_error(f"{dead[0].name} exited while waiting for {what}", last, procs)
        if time.monotonic() > deadline:
            raise _start_error(f"timed out waiting for {what} ({url})", last, procs)
        time.sleep(0.2)


def _start_error(reason: str, last: str, procs: Sequence[_Process]) -> KubeAPIStartError:
    details = "\n".join(p.describe() for p in procs)
    return KubeAPIStartError(f"{reason}\nlast probe result: {last}\n{details}")


def _start(work_dir: Path, pki: _PKI, timeout: float) -> tuple[KubeAPI, list[_Process]]:
    etcd_client, etcd_peer, api_port = _free_ports(3)
    etcd_url = f"http://127.0.0.1:{etcd_client}"
    peer_url = f"http://127.0.0.1:{etcd_peer}"
    server = f"https://127.0.0.1:{api_port}"
    deadline = time.monotonic() + timeout
    procs: list[_Process] = []
    try:
        data_dir = work_dir / "etcd-data"
        data_dir.mkdir(mode=0o700, exist_ok=True)
        etcd = _Process(
            "etcd",
            [
                str(tool_path("etcd")),
                "--name=test",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=test={peer_url}",
                "--initial-cluster-state=new",
                # Throw-away data: skip fsync, keep the log readable.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            work_dir / "etcd.log",
            work_dir,
        )
        procs.append(etcd)
        _wait_until(
            "etcd /health",
            f"{etcd_url}/health",
            _opener(),
            lambda status, body: status == 200 and '"health":"true"' in body.replace(" ", ""),
            procs,
            deadline,
        )

        apiserver = _Process(
            "kube-apiserver",
            [
                str(tool_path("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                # The endpoint reconciler publishes the advertise address as
                # the endpoint of the default/kubernetes Service and refuses a
                # loopback one; nothing in-cluster needs that Service here.
                "--endpoint-reconciler-type=none",
                f"--secure-port={api_port}",
                f"--cert-dir={work_dir / 'apiserver-certs'}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={pki.sa_pub}",
                f"--service-account-signing-key-file={pki.sa_key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=RBAC",
                f"--disable-admission-plugins={','.join(DISABLED_ADMISSION_PLUGINS)}",
                "--profiling=false",
                "--v=1",
            ],
            work_dir / "kube-apiserver.log",
            work_dir,
        )
        procs.append(apiserver)
        ctx = ssl.create_default_context(cafile=str(pki.ca_cert))
        ctx.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        _wait_until(
            "kube-apiserver /readyz",
            f"{server}/readyz",
            _opener(ctx),
            lambda status, body: status == 200 and body.strip() == "ok",
            procs,
            deadline,
        )
    except BaseException:
        for p in reversed(procs):
            p.stop()
        raise

    api = KubeAPI(
        server=server,
        kubeconfig=_write_kubeconfig(work_dir / "kubeconfig", server, pki),
        ca_file=pki.ca_cert,
        client_cert_file=pki.admin_cert,
        client_key_file=pki.admin_key,
        etcd_url=etcd_url,
        work_dir=work_dir,
    )
    return api, procs


def start_kube_api(work_dir: Path, timeout: float = 120.0) -> tuple[KubeAPI, Callable[[], None]]:
    """Start etcd + kube-apiserver in ``work_dir``; return the connection
    details and a function that stops both. Used by the ``kube_api`` fixture;
    exposed for scripts that want a server outside pytest."""
    pki = _generate_pki(work_dir / "pki")
    attempts = 3
    for attempt in range(1, attempts + 1):
        run_dir = work_dir / f"run{attempt}"
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            api, procs = _start(run_dir, pki, timeout)
        except KubeAPIStartError as exc:
            # Another process may grab a port between _free_ports() and the
            # bind; retry with fresh ports in that (rare) case only.
            if attempt < attempts and "address already in use" in str(exc).lower():
                continue
            raise

        def stop(procs: list[_Process] = procs) -> None:
            # API server first so it does not log etcd connection errors.
            for p in reversed(procs):
                p.stop()

        return api, stop
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture(scope="session")
def kube_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeAPI]:
    """A running kube-apiserver + etcd for the whole test session."""
    timeout = float(os.environ.get("BTP_KUBE_API_START_TIMEOUT", "120"))
    api, stop = start_kube_api(tmp_path_factory.mktemp("kube-api"), timeout=timeout)
    try:
        yield api
    finally:
        stop()


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"t-{slug or 'test'}-{secrets.token_hex(3)}"


@pytest.fixture
def kube_namespace(kube_api: KubeAPI, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test; yields its name.

    The namespace is deleted afterwards without waiting: finishing the
    deletion is the namespace controller's job and no controller-manager runs,
    so it stays Terminating until the session's API server goes away.
    """
    name = _namespace_name(request.node.name)
    body = k8s.V1Namespace(
        api_version="v1",
        kind="Namespace",
        metadata=k8s.V1ObjectMeta(name=name, labels={NAMESPACE_LABEL: "kube_namespace"}),
    )
    with kube_api.api_client() as api:
        k8s.CoreV1Api(api).create_namespace(body=body)
    try:
        yield name
    finally:
        with kube_api.api_client() as api:
            try:
                k8s.CoreV1Api(api).delete_namespace(name=name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


def install_crds(
    api_client: k8s.ApiClient,
    crd_docs: list[dict[str, Any]],
    timeout: float = 30.0,
) -> list[str]:
    """Create (or replace, if they exist) the given CustomResourceDefinition
    documents and wait until each is Established. Returns the CRD names."""
    ext = k8s.ApiextensionsV1Api(api_client)
    names: list[str] = []
    for doc in crd_docs:
        if doc.get("kind") != "CustomResourceDefinition":
            raise ValueError(f"not a CustomResourceDefinition: {doc.get('kind')!r}")
        name = doc["metadata"]["name"]
        names.append(name)
        _create_or_replace_crd(ext, name, doc)

    deadline = time.monotonic() + timeout
    for name in names:
        while True:
            conditions = _crd_conditions(ext, name)
            if conditions.get("Established", {}).get("status") == "True":
                break
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"CRD {name} not Established after {timeout}s; conditions: "
                    f"{json.dumps(conditions, sort_keys=True)}"
                )
            time.sleep(0.1)
    return names


def _crd_model(doc: dict[str, Any]) -> k8s.V1CustomResourceDefinition:
    model = k8s.V1CustomResourceDefinition.from_dict(doc)
    if model is None:
        raise ValueError(f"cannot parse CustomResourceDefinition {doc!r}")
    return model


def _create_or_replace_crd(ext: k8s.ApiextensionsV1Api, name: str, doc: dict[str, Any]) -> None:
    try:
        ext.create_custom_resource_definition(body=_crd_model(doc))
        return
    except ApiException as exc:
        if exc.status != 409:
            raise
    for _ in range(5):
        current = _read_raw(ext.read_custom_resource_definition, name)
        body = copy.deepcopy(doc)
        body.setdefault("metadata", {})["resourceVersion"] = current["metadata"]["resourceVersion"]
        try:
            ext.replace_custom_resource_definition(name=name, body=_crd_model(body))
            return
        except ApiException as exc:
            if exc.status != 409:  # lost a race with another writer: retry
                raise
    raise RuntimeError(f"could not replace CRD {name}: repeated update conflicts")


def _read_raw(read: Callable[..., Any], name: str) -> dict[str, Any]:
    # The raw JSON rather than the generated model: only a few fields are
    # needed, and their shape then does not depend on the client version.
    resp = read(name=name, _preload_content=False)
    try:
        obj: dict[str, Any] = json.loads(resp.data)
    finally:
        resp.release_conn()
    return obj


def _crd_conditions(ext: k8s.ApiextensionsV1Api, name: str) -> dict[str, dict[str, Any]]:
    obj = _read_raw(ext.read_custom_resource_definition_status, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
