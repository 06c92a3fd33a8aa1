"""Webhook TLS from Gardener cert-management (`cert.gardener.cloud/v1alpha1`), no key in Git.

What Gardener's cert-management offers (researched in gardener/cert-management: the API types,
the issuer handlers, the examples and the CA injector docs):

- `Issuer` with `spec.selfSigned: {}`, `spec.ca.privateKeySecretRef: {name, namespace}` (a
  `kubernetes.io/tls` Secret holding a CA's `tls.crt`/`tls.key`), or `spec.acme`.
- `Certificate` with `commonName` (at most 64 characters), `dnsNames`, `isCA` (a self-signed
  issuer only signs CA certificates), `duration` (default 2160h, at least twice the renewal
  window), `renewBefore`, `privateKey: {algorithm: RSA|ECDSA, size}`, `issuerRef: {name,
  namespace}` (the namespace is required for an issuer in the shoot itself; a bare name means an
  issuer of the Gardener "default" cluster) and `secretRef: {name, namespace}` or `secretName`.
  There is no `usages` field. The issued Secret is `kubernetes.io/tls` with `tls.crt`, `tls.key`
  and `ca.crt` (the issuer's certificate). The controller writes `spec.secretRef` back, so we
  render `secretRef` (not `secretName`) and a GitOps diff stays quiet.
- CA injection: cert-management has a CA injector, as cert-manager does. With it enabled
  (shoot-cert-service extension `providerConfig.caInjector.enabled: true`, or the
  `cainjector-*` controllers of cert-controller-manager), Validating/MutatingWebhookConfigurations,
  CRD conversion webhooks and APIServices annotated `cert.gardener.cloud/inject-ca-from:
  <namespace>/<Certificate>` get the `ca.crt` of that Certificate's Secret as `caBundle`, kept up
  to date on rotation. Like cert-manager's, it patches every webhook of an annotated
  configuration, URL webhooks included.

Chosen: the same chain as cert-manager mode, in Gardener's kinds, and Gardener's own injector
(no private key and no caBundle in Git): a selfSigned Issuer signs a CA Certificate (RSA 4096,
87600h, Secret `ca-server-cert`), a CA Issuer uses that Secret, and it signs the serving
Certificate (RSA 4096, 8760h, SANs `<svc>.<ns>.svc` and `<svc>.<ns>`, Secret
`webhook-server-cert`), both renewed 168h before expiry. With an issuer given, only the serving
Certificate is rendered. Requirements in the cluster, which btp-gitops cannot check offline:
issuers in the shoot (shoot-cert-service `shootIssuers.enabled: true`) unless an issuer of the
default cluster is given, and the CA injector. The shoot's default ACME issuer cannot be used: no
public CA signs in-cluster names such as `<svc>.<ns>.svc`. Gardener refuses to issue a certificate
that would outlive its CA, where cert-manager shortens it: in the CA's last year the serving
certificate waits for the CA's renewal (168h before it expires).
"""

from __future__ import annotations

from btp_gitops.generator.core.objects import Manifest, annotations_of
from btp_gitops.generator.transforms.certificates import (
    CA_LIFETIME,
    RENEW_BEFORE,
    SERVING_LIFETIME,
    CertificatePlan,
    service_dns_names,
    service_host,
    strip_webhook_certificate_objects,
    webhook_client_configs,
    webhook_service_hosts,
)

API_VERSION = "cert.gardener.cloud/v1alpha1"
INJECT_CA_FROM = "cert.gardener.cloud/inject-ca-from"
ORIGIN = "btp-gitops/certificates"
MAX_COMMON_NAME = 64  # the Certificate CRD's limit
PRIVATE_KEY = {"algorithm": "RSA", "size": 4096}


def _object(kind: str, name: str, namespace: str, spec: dict[str, object]) -> Manifest:
    body = {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return Manifest(body, ORIGIN)


def _self_signed_chain(plan: CertificatePlan) -> tuple[list[Manifest], dict[str, str]]:
    """selfSigned Issuer -> CA Certificate (`ca-server-cert`) -> CA Issuer, and the CA Issuer's ref."""
    namespace = plan.namespace
    self_signed = f"{plan.prefix}-selfsigned-issuer"
    ca_issuer = f"{plan.prefix}-ca-issuer"
    ca_secret = {"name": plan.ca_secret, "namespace": namespace}
    chain = [
        _object("Issuer", self_signed, namespace, {"selfSigned": {}}),
        _object(
            "Certificate",
            f"{plan.prefix}-ca-cert",
            namespace,
            {
                "commonName": f"{plan.prefix}-ca",
                "isCA": True,
                "duration": CA_LIFETIME,
                "renewBefore": RENEW_BEFORE,
                "privateKey": dict(PRIVATE_KEY),
                # Issuers in the shoot must be referenced with their namespace.
                "issuerRef": {"name": self_signed, "namespace": namespace},
                "secretRef": ca_secret,
            },
        ),
        _object("Issuer", ca_issuer, namespace, {"ca": {"privateKeySecretRef": dict(ca_secret)}}),
    ]
    return chain, {"name": ca_issuer, "namespace": namespace}


def gardener_objects(
    plan: CertificatePlan, dns_names: list[str], issuer_namespace: str | None = None
) -> list[Manifest]:
    """The Issuers and Certificates for `dns_names`; an issuer of the plan replaces the chain.

    `issuer_namespace` goes with the plan's issuer: given for an issuer in the shoot, absent for
    one of Gardener's default cluster.
    """
    objects: list[Manifest] = []
    if plan.issuer_name is None:
        objects, issuer = _self_signed_chain(plan)
    else:
        issuer = {"name": plan.issuer_name}
        if issuer_namespace:
            issuer["namespace"] = issuer_namespace
    spec: dict[str, object] = {}
    if len(dns_names[0]) <= MAX_COMMON_NAME:  # else the SANs alone name the Service
        spec["commonName"] = dns_names[0]
    spec |= {
        "dnsNames": dns_names,
        "duration": SERVING_LIFETIME,
        "renewBefore": RENEW_BEFORE,
        "privateKey": dict(PRIVATE_KEY),
        "issuerRef": issuer,
        "secretRef": {"name": plan.serving_secret, "namespace": plan.namespace},
    }
    objects.append(_object("Certificate", plan.serving_certificate, plan.namespace, spec))
    return objects


def issue_webhook_certificates_with_gardener(
    manifests: list[Manifest], plan: CertificatePlan, issuer_namespace: str | None = None
) -> list[Manifest]:
    """Replace chart-made webhook TLS with Gardener Certificates and Gardener's CA injection.

    Every webhook configuration and conversion webhook calling one of the webhook Services loses
    its inline caBundle and gets `cert.gardener.cloud/inject-ca-from` pointing at the serving
    Certificate; webhooks called by URL are left alone. The chart's certificate Secrets and any
    cert-manager chain or annotation it rendered are removed, so modes don't mix.
    """
    services = webhook_service_hosts(manifests, plan.namespace)
    if not services:
        return manifests
    served = set(services)
    kept = strip_webhook_certificate_objects(manifests, plan, services)
    for manifest in kept:
        configs = [
            c for c in webhook_client_configs(manifest.body) if service_host(c, plan.namespace) in served
        ]
        if not configs:
            continue
        for config in configs:
            config.pop("caBundle", None)
        annotations_of(manifest.body)[INJECT_CA_FROM] = f"{plan.namespace}/{plan.serving_certificate}"
    return kept + gardener_objects(plan, service_dns_names(services), issuer_namespace)
