"""Webhook TLS without private keys in Git: cert-manager issues the certificates.

For each webhook Service that the webhook configurations (and CRD conversion webhooks) call, we
render a serving Certificate whose Secret the workload mounts, and let the certificate manager
inject the CA into `clientConfig.caBundle`. With no issuer given, a self-signed CA chain is
rendered too (selfSigned Issuer -> CA Certificate -> CA Issuer), with the key sizes, lifetimes and
Secret names BTP Manager used, so existing tooling that looks for them still finds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from btp_gitops.generator.core.objects import (
    KubeObject,
    Manifest,
    annotations_of,
    api_group,
    get_path,
    kind_of,
    name_of,
    namespace_of,
)

WEBHOOK_CONFIGURATION_KINDS = frozenset({"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"})
INJECT_CA_FROM = "cert-manager.io/inject-ca-from"
# Every annotation by which a certificate manager's CA injector would overwrite `caBundle`.
CA_INJECTION_ANNOTATIONS = (
    INJECT_CA_FROM,
    "cert-manager.io/inject-ca-from-secret",
    "cert.gardener.cloud/inject-ca-from",
    "cert.gardener.cloud/inject-ca-from-secret",
)
CA_LIFETIME = "87600h"
SERVING_LIFETIME = "8760h"
RENEW_BEFORE = "168h"  # BTP Manager regenerated certificates expiring within 168h


@dataclass(frozen=True, slots=True)
class CertificatePlan:
    """What to issue: names follow BTP Manager's Secrets (`ca-server-cert`, `webhook-server-cert`)."""

    prefix: str  # e.g. "sap-btp-operator"
    namespace: str
    ca_secret: str = "ca-server-cert"
    serving_secret: str = "webhook-server-cert"
    issuer_name: str | None = None  # an existing issuer for the serving certificate
    issuer_kind: str = "Issuer"
    issuer_group: str = "cert-manager.io"

    @property
    def serving_certificate(self) -> str:
        return f"{self.prefix}-webhook-cert"


@dataclass(frozen=True, slots=True)
class ExistingCertificates:
    """What the `ca-server-cert` / `webhook-server-cert` Secrets held; None where absent (read by
    the self-signed mode, transforms.self_signed_certificates; here because a post-render request
    carries it in every mode, without loading that module's `cryptography`)."""

    ca_certificate: bytes | None = None
    ca_key: bytes | None = field(default=None, repr=False)
    serving_certificate: bytes | None = None
    serving_key: bytes | None = field(default=None, repr=False)


NO_EXISTING_CERTIFICATES = ExistingCertificates()


def webhook_client_configs(obj: KubeObject) -> list[dict[str, object]]:
    """Every `clientConfig` of a webhook configuration or of a CRD's conversion webhook."""
    kind = kind_of(obj)
    if kind in WEBHOOK_CONFIGURATION_KINDS:
        webhooks = obj.get("webhooks")
        return [
            w["clientConfig"]
            for w in (webhooks if isinstance(webhooks, list) else [])
            if isinstance(w, dict) and isinstance(w.get("clientConfig"), dict)
        ]
    if kind == "CustomResourceDefinition":
        config = get_path(obj, "spec", "conversion", "webhook", "clientConfig")
        return [config] if isinstance(config, dict) else []
    return []


def webhook_service_hosts(manifests: list[Manifest], default_namespace: str) -> list[tuple[str, str]]:
    """(service name, namespace) of every Service a webhook calls, sorted and unique."""
    found: set[tuple[str, str]] = set()
    for manifest in manifests:
        for config in webhook_client_configs(manifest.body):
            service = config.get("service")
            if isinstance(service, dict) and service.get("name"):
                found.add((str(service["name"]), str(service.get("namespace") or default_namespace)))
    return sorted(found)


def service_dns_names(services: list[tuple[str, str]]) -> list[str]:
    """The SANs BTP Manager put on the webhook certificate: `<svc>.<ns>.svc` and `<svc>.<ns>`."""
    names: list[str] = []
    for service, namespace in services:
        names += [f"{service}.{namespace}.svc", f"{service}.{namespace}"]
    return names


def _cert_manager_object(kind: str, name: str, namespace: str, spec: dict[str, object]) -> Manifest:
    body = {
        "apiVersion": "cert-manager.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return Manifest(body, "btp-gitops/certificates")


def cert_manager_objects(plan: CertificatePlan, dns_names: list[str]) -> list[Manifest]:
    objects: list[Manifest] = []
    issuer = {"name": plan.issuer_name, "kind": plan.issuer_kind, "group": plan.issuer_group}
    if plan.issuer_name is None:
        selfsigned = f"{plan.prefix}-selfsigned-issuer"
        ca_issuer = f"{plan.prefix}-ca-issuer"
        objects += [
            _cert_manager_object("Issuer", selfsigned, plan.namespace, {"selfSigned": {}}),
            _cert_manager_object(
                "Certificate",
                f"{plan.prefix}-ca-cert",
                plan.namespace,
                {
                    "isCA": True,
                    "commonName": f"{plan.prefix}-ca",
                    "secretName": plan.ca_secret,
                    "duration": CA_LIFETIME,
                    "renewBefore": RENEW_BEFORE,
                    "privateKey": {"algorithm": "RSA", "size": 4096, "rotationPolicy": "Always"},
                    "usages": ["digital signature", "cert sign"],
                    "issuerRef": {"name": selfsigned, "kind": "Issuer", "group": "cert-manager.io"},
                },
            ),
            _cert_manager_object("Issuer", ca_issuer, plan.namespace, {"ca": {"secretName": plan.ca_secret}}),
        ]
        issuer = {"name": ca_issuer, "kind": "Issuer", "group": "cert-manager.io"}
    objects.append(
        _cert_manager_object(
            "Certificate",
            plan.serving_certificate,
            plan.namespace,
            {
                "commonName": dns_names[0],
                "dnsNames": dns_names,
                "secretName": plan.serving_secret,
                "duration": SERVING_LIFETIME,
                "renewBefore": RENEW_BEFORE,
                "privateKey": {"algorithm": "RSA", "size": 4096, "rotationPolicy": "Always"},
                "usages": ["digital signature", "server auth", "client auth"],
                "issuerRef": issuer,
            },
        )
    )
    return objects


def _is_certificate_secret(obj: KubeObject, plan: CertificatePlan) -> bool:
    return (
        kind_of(obj) == "Secret"
        and name_of(obj) in {plan.ca_secret, plan.serving_secret}
        and namespace_of(obj) in {"", plan.namespace}
    )


def issue_webhook_certificates_with_cert_manager(
    manifests: list[Manifest], plan: CertificatePlan
) -> list[Manifest]:
    """Replace chart-made webhook certificates with cert-manager ones and CA injection.

    Every webhook configuration and conversion webhook that calls one of the chart's Services gets
    `cert-manager.io/inject-ca-from` and loses any inline caBundle; Secrets holding certificates
    the chart generated itself are dropped (their keys must not reach Git), and so is a
    cert-manager chain the chart rendered for them (it would fight ours over the same Secret).
    """
    services = webhook_service_hosts(manifests, plan.namespace)
    if not services:
        return manifests
    kept = strip_webhook_certificate_objects(manifests, plan, services)
    for manifest in kept:
        # Webhooks called by URL are served by someone else, with their own CA: left alone.
        configs = [c for c in webhook_client_configs(manifest.body) if isinstance(c.get("service"), dict)]
        if not configs:
            continue
        for config in configs:
            config.pop("caBundle", None)
        annotations_of(manifest.body)[INJECT_CA_FROM] = f"{plan.namespace}/{plan.serving_certificate}"
    return kept + cert_manager_objects(plan, service_dns_names(services))


def service_host(config: dict[str, object], default_namespace: str) -> tuple[str, str] | None:
    """(name, namespace) of the Service a `clientConfig` calls; None when it calls a URL."""
    service = config.get("service")
    if isinstance(service, dict) and service.get("name"):
        return str(service["name"]), str(service.get("namespace") or default_namespace)
    return None


def _calls_any(obj: KubeObject, services: set[tuple[str, str]], default_namespace: str) -> bool:
    return any(service_host(c, default_namespace) in services for c in webhook_client_configs(obj))


def _cert_manager_objects_in(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if api_group(m.body) == "cert-manager.io" and kind_of(m.body) == kind]


@dataclass(frozen=True, slots=True)
class _CertManagerObjects:
    """The cert-manager Certificates and namespaced Issuers of a stream, keyed as cert-manager does."""

    certificates: list[Manifest]
    issuers: dict[tuple[str, str], Manifest]
    default_namespace: str

    @classmethod
    def of(cls, manifests: list[Manifest], default_namespace: str) -> _CertManagerObjects:
        found = cls(_cert_manager_objects_in(manifests, "Certificate"), {}, default_namespace)
        found.issuers.update({found.where(m): m for m in _cert_manager_objects_in(manifests, "Issuer")})
        return found

    def where(self, manifest: Manifest) -> tuple[str, str]:
        return namespace_of(manifest.body) or self.default_namespace, name_of(manifest.body)

    def depends_on(self, manifest: Manifest) -> list[Manifest]:
        """A Certificate's namespaced Issuer; a CA Issuer's Certificates writing its CA Secret.

        ClusterIssuers are shared with others and never followed.
        """
        namespace = self.where(manifest)[0]
        if kind_of(manifest.body) == "Certificate":
            ref = get_path(manifest.body, "spec", "issuerRef") or {}
            issuer = self.issuers.get((namespace, str(ref.get("name"))))
            return [issuer] if issuer is not None and ref.get("kind", "Issuer") == "Issuer" else []
        secret = get_path(manifest.body, "spec", "ca", "secretName")
        return [
            m
            for m in self.certificates
            if self.where(m)[0] == namespace and get_path(m.body, "spec", "secretName") == secret
        ]

    def closure(self, starts: list[Manifest]) -> set[int]:
        """ids of `starts` and of everything they depend on, transitively."""
        found: set[int] = set()
        pending = list(starts)
        while pending:
            manifest = pending.pop()
            if id(manifest.body) not in found:
                found.add(id(manifest.body))
                pending += self.depends_on(manifest)
        return found


def _chart_cert_manager_chain(
    manifests: list[Manifest], plan: CertificatePlan, injected_from: set[tuple[str, str]]
) -> set[int]:
    """ids of the cert-manager Certificates and Issuers a chart rendered for its webhook TLS.

    Starts at the Certificates writing the webhook Secrets or named by an injection annotation
    and takes what they depend on, except what a Certificate outside the chain still needs.
    """
    objects = _CertManagerObjects.of(manifests, plan.namespace)
    wanted_secrets = {(plan.namespace, plan.ca_secret), (plan.namespace, plan.serving_secret)}
    starts = [
        m
        for m in objects.certificates
        if objects.where(m) in injected_from
        or (objects.where(m)[0], str(get_path(m.body, "spec", "secretName"))) in wanted_secrets
    ]
    chain = objects.closure(starts)
    others = [m for m in objects.certificates if id(m.body) not in chain]
    # The starting Certificates go regardless: they would write the webhook Secrets we own.
    return chain - objects.closure(others) | {id(m.body) for m in starts}


def strip_webhook_certificate_objects(
    manifests: list[Manifest], plan: CertificatePlan, services: list[tuple[str, str]]
) -> list[Manifest]:
    """The stream without the webhook TLS a chart (or another mode) brought, so modes don't mix.

    Drops the `ca-server-cert` / `webhook-server-cert` Secrets of the plan's namespace and the
    cert-manager chain that issues them, and removes every CA injection annotation from the
    objects whose webhooks call one of `services`. Rewritten objects are changed in place:
    post-render matches objects back to the documents it read by identity.
    """
    served = set(services)
    injected_from: set[tuple[str, str]] = set()
    for manifest in manifests:
        if not _calls_any(manifest.body, served, plan.namespace):
            continue
        annotations = annotations_of(manifest.body)
        reference = annotations.get(INJECT_CA_FROM, "")
        if "/" in reference:
            namespace, _, name = reference.partition("/")
            injected_from.add((namespace, name))
        for key in CA_INJECTION_ANNOTATIONS:
            annotations.pop(key, None)
        if not annotations:
            del manifest.body["metadata"]["annotations"]
    chain = _chart_cert_manager_chain(manifests, plan, injected_from)
    return [m for m in manifests if id(m.body) not in chain and not _is_certificate_secret(m.body, plan)]
