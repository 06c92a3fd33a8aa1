"""Webhook TLS that btp-gitops generates itself, as BTP Manager did: for `post-render` only.

The output of `post-render` goes to the cluster, not to Git, so a CA and a serving certificate may
be generated there (a private key must never be committed); `render` refuses this mode. What is
generated follows BTP Manager's webhook certificates (https://github.com/kyma-project/btp-manager/tree/main/docs):

    CA        RSA 4096, 87600h, BasicConstraints CA (path length 0), KeyUsage digitalSignature +
              keyCertSign; Secret `ca-server-cert` with `ca.crt` / `ca.key`
    serving   RSA 4096, 8760h, KeyUsage digitalSignature + keyEncipherment, ExtendedKeyUsage
              serverAuth + clientAuth, SANs `<svc>.<ns>.svc` and `<svc>.<ns>` of every webhook
              Service, signed by the CA; Secret `webhook-server-cert` (kubernetes.io/tls) with
              `tls.crt` / `tls.key`

and `clientConfig.caBundle` (the CA) goes into every webhook of the Mutating/Validating webhook
configurations and every CRD conversion webhook that calls one of those Services.

"The Services" are the Services a webhook calls that the stream itself deploys: a webhook called
by URL, or calling a Service that is not in the stream, is served by someone else with their own
CA and is left alone.

Existing certificates (from a file or the cluster) are reused; the regeneration table is the
reference's, evaluated in this order:

1. CA missing, invalid or expiring within 168h -> regenerate both.
2. Serving certificate not signed by the CA -> regenerate both.
3. Serving certificate missing or invalid -> regenerate only it, signed by the existing CA.
4. Otherwise keep both, byte for byte.

"Invalid" means, for either certificate: the certificate or key is absent from its Secret, is not
PEM (an unencrypted private key for the key), the key is not the certificate's, the key is not
RSA of at least 4096 bits, or the certificate is not yet valid or already expired. The CA must
also be a CA (BasicConstraints) allowed to sign certificates (KeyUsage keyCertSign). The serving
certificate must also cover the SANs of the Services found now, allow serverAuth
(ExtendedKeyUsage) and digitalSignature (KeyUsage, when present), and - like the CA - not expire
within 168h: the next post-render may be far away, and cert-manager mode renews both 168h early.
A serving certificate that cannot be parsed cannot be checked against the CA, so it counts as
invalid (rule 3), not as foreign.

Everything here is pure: the clock and the RSA key factory are parameters. Key material never
appears in a message, a note or a repr.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from btp_gitops.generator.core.objects import Manifest, describe, kind_of, name_of, namespace_of
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.transforms.certificates import (
    NO_EXISTING_CERTIFICATES,  # noqa: F401 - re-exported beside ExistingCertificates, this mode's input
    CertificatePlan,
    ExistingCertificates,
    service_dns_names,
    service_host,
    strip_webhook_certificate_objects,
    webhook_client_configs,
    webhook_service_hosts,
)

KEY_SIZE = 4096
CA_VALIDITY = timedelta(hours=87600)
SERVING_VALIDITY = timedelta(hours=8760)
RENEW_WITHIN = timedelta(hours=168)
CA_CERT_KEY, CA_KEY_KEY = "ca.crt", "ca.key"
TLS_CERT_KEY, TLS_KEY_KEY = "tls.crt", "tls.key"
ORIGIN = "btp-gitops/certificates"
MAX_COMMON_NAME = 64  # RFC 5280 upper bound for a CN

KeyFactory = Callable[[], rsa.RSAPrivateKey]


def generate_rsa_4096_key() -> rsa.RSAPrivateKey:
    """The production key factory."""
    return rsa.generate_private_key(public_exponent=65537, key_size=KEY_SIZE)


# --- certificates in and out -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WebhookCertificates:
    """The CA and serving certificate as PEM, ready for the Secrets and the caBundle."""

    ca_certificate: bytes
    ca_key: bytes = field(repr=False)
    serving_certificate: bytes
    serving_key: bytes = field(repr=False)


def _secret_values(manifest: Manifest) -> tuple[dict[str, bytes], list[Problem]]:
    """`data` (base64) overlaid with `stringData` (plain), as the API server merges them."""
    values: dict[str, bytes] = {}
    problems: list[Problem] = []

    def problem(key: str, message: str) -> None:
        problems.append(Problem(manifest.origin, message, object_ref=describe(manifest.body), field_path=key))

    data = manifest.body.get("data") or {}
    string_data = manifest.body.get("stringData") or {}
    for field_name, mapping in (("data", data), ("stringData", string_data)):
        if not isinstance(mapping, dict):
            problem(field_name, "must be a mapping of keys to values")
    if problems:
        return values, problems
    for key, value in data.items():
        if not isinstance(value, str):
            problem(f"data.{key}", "must be a base64 string")
            continue
        try:
            # validate=True: stray characters are an error, not silently dropped; line breaks are fine.
            values[str(key)] = base64.b64decode("".join(value.split()), validate=True)
        except binascii.Error:
            # The exception text is not shown: it could quote part of the key.
            problem(f"data.{key}", "not valid base64")
    for key, value in string_data.items():
        if isinstance(value, str):
            values[str(key)] = value.encode()
        else:
            problem(f"stringData.{key}", "must be a string")
    return values, problems


def _secrets_named(
    secrets: Iterable[Manifest], plan: CertificatePlan, names: list[str]
) -> dict[str, list[Manifest]]:
    """The Secrets of each name in the plan's namespace (no namespace counts as the plan's)."""
    found: dict[str, list[Manifest]] = {name: [] for name in names}
    for manifest in secrets:
        body = manifest.body
        if (
            kind_of(body) == "Secret"
            and name_of(body) in found
            and namespace_of(body) in {"", plan.namespace}
        ):
            found[name_of(body)].append(manifest)
    return found


def existing_certificates_from_secrets(
    secrets: Iterable[Manifest], plan: CertificatePlan
) -> ExistingCertificates:
    """The certificates in the plan's `ca-server-cert` and `webhook-server-cert` Secrets.

    `secrets` are Secret objects as read from a file of manifests or from the cluster; other
    objects, and Secrets of other names or namespaces (no namespace counts as the plan's), are
    ignored. Malformed Secrets raise InvalidSpec naming the file, object and field, never a value.
    """
    wanted = {plan.ca_secret: (CA_CERT_KEY, CA_KEY_KEY), plan.serving_secret: (TLS_CERT_KEY, TLS_KEY_KEY)}
    found = _secrets_named(secrets, plan, list(wanted))
    problems: list[Problem] = []
    values: dict[str, bytes | None] = {}
    for name, (cert_key, key_key) in wanted.items():
        if len(found[name]) > 1:
            origins = ", ".join(m.origin for m in found[name])
            problems.append(
                Problem(
                    found[name][1].origin, f"Secret {plan.namespace}/{name} given more than once: {origins}"
                )
            )
            continue
        secret_values, secret_problems = _secret_values(found[name][0]) if found[name] else ({}, [])
        problems += secret_problems
        values[cert_key], values[key_key] = secret_values.get(cert_key), secret_values.get(key_key)
    if problems:
        raise InvalidSpec("cannot read the existing webhook certificates", problems)
    return ExistingCertificates(
        ca_certificate=values[CA_CERT_KEY],
        ca_key=values[CA_KEY_KEY],
        serving_certificate=values[TLS_CERT_KEY],
        serving_key=values[TLS_KEY_KEY],
    )


# --- checks ----------------------------------------------------------------------------------


class Verdict(StrEnum):
    VALID = "valid"
    MISSING = "missing"
    EXPIRING = "expiring"
    INVALID = "invalid"
    FOREIGN = "foreign"  # the serving certificate was not signed by the CA
    CA_REPLACED = "ca-replaced"  # not checked: the CA it hangs on is regenerated


@dataclass(frozen=True, slots=True)
class Finding:
    verdict: Verdict
    detail: str  # why, for a human; names fields and dates, never key material


@dataclass(frozen=True, slots=True)
class RegenerationDecision:
    ca: Finding
    serving: Finding

    @property
    def regenerate_ca(self) -> bool:
        return self.ca.verdict is not Verdict.VALID or self.serving.verdict is Verdict.FOREIGN

    @property
    def regenerate_serving(self) -> bool:
        return self.regenerate_ca or self.serving.verdict is not Verdict.VALID


class _Unusable(Exception):
    """A check failed; carries the Finding to report."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(detail)
        self.finding = Finding(verdict, detail)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_pair(
    certificate_pem: bytes | None, key_pem: bytes | None, cert_key: str, key_key: str
) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
    if certificate_pem is None:
        raise _Unusable(Verdict.MISSING, f"no {cert_key} found")
    if key_pem is None:
        raise _Unusable(Verdict.INVALID, f"{key_key} is missing")
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem)
    except ValueError:
        raise _Unusable(Verdict.INVALID, f"{cert_key} is not a PEM certificate") from None
    try:
        # OpenSSL's full RSA key check costs up to a second for 4096 bits; the probe signature
        # below checks what matters here more cheaply: the key signs what the certificate verifies.
        key = serialization.load_pem_private_key(key_pem, password=None, unsafe_skip_rsa_key_validation=True)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        # `from None`: the parser's message is not carried along, it could quote key bytes.
        raise _Unusable(Verdict.INVALID, f"{key_key} is not an unencrypted PEM private key") from None
    if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < KEY_SIZE:
        raise _Unusable(Verdict.INVALID, f"{key_key} is not an RSA key of at least {KEY_SIZE} bits")
    if not _signs_for(key, certificate):
        raise _Unusable(Verdict.INVALID, f"{key_key} is not the key of {cert_key}")
    return certificate, key


def _signs_for(key: rsa.RSAPrivateKey, certificate: x509.Certificate) -> bool:
    """Whether a signature made with `key` verifies with the certificate's public key.

    The probe signature is thrown away: a broken key's output never leaves this function.
    """
    public_key = certificate.public_key()
    if not isinstance(public_key, rsa.RSAPublicKey):
        return False
    probe = b"btp-gitops: does this key belong to this certificate?"
    try:
        public_key.verify(
            key.sign(probe, padding.PKCS1v15(), hashes.SHA256()), probe, padding.PKCS1v15(), hashes.SHA256()
        )
    except (InvalidSignature, ValueError):
        return False
    return True


def _public_key_der(key: object) -> bytes:
    if not isinstance(key, rsa.RSAPublicKey):
        return b""
    return key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _check_validity(certificate: x509.Certificate, cert_key: str, now: datetime) -> None:
    if now < certificate.not_valid_before_utc:
        raise _Unusable(
            Verdict.INVALID, f"{cert_key} is not valid before {_timestamp(certificate.not_valid_before_utc)}"
        )
    if now >= certificate.not_valid_after_utc:
        raise _Unusable(
            Verdict.INVALID, f"{cert_key} expired at {_timestamp(certificate.not_valid_after_utc)}"
        )
    if certificate.not_valid_after_utc - now <= RENEW_WITHIN:
        raise _Unusable(
            Verdict.EXPIRING,
            f"{cert_key} expires at {_timestamp(certificate.not_valid_after_utc)}, within 168h",
        )


def _extension(certificate: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.ExtensionType | None:
    try:
        return certificate.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _check_ca_usage(certificate: x509.Certificate) -> None:
    constraints = _extension(certificate, x509.BasicConstraints)
    if not isinstance(constraints, x509.BasicConstraints) or not constraints.ca:
        raise _Unusable(Verdict.INVALID, f"{CA_CERT_KEY} is not a CA certificate (BasicConstraints)")
    usage = _extension(certificate, x509.KeyUsage)
    if not isinstance(usage, x509.KeyUsage) or not usage.key_cert_sign:
        raise _Unusable(Verdict.INVALID, f"{CA_CERT_KEY} may not sign certificates (KeyUsage keyCertSign)")


def _check_serving_usage(certificate: x509.Certificate, dns_names: Sequence[str]) -> None:
    san = _extension(certificate, x509.SubjectAlternativeName)
    covered = (
        set(san.get_values_for_type(x509.DNSName)) if isinstance(san, x509.SubjectAlternativeName) else set()
    )
    uncovered = [name for name in dns_names if name not in covered]
    if uncovered:
        raise _Unusable(Verdict.INVALID, f"{TLS_CERT_KEY} does not cover {', '.join(uncovered)}")
    extended = _extension(certificate, x509.ExtendedKeyUsage)
    if not isinstance(extended, x509.ExtendedKeyUsage) or ExtendedKeyUsageOID.SERVER_AUTH not in extended:
        raise _Unusable(Verdict.INVALID, f"{TLS_CERT_KEY} does not allow serverAuth (ExtendedKeyUsage)")
    usage = _extension(certificate, x509.KeyUsage)
    if isinstance(usage, x509.KeyUsage) and not usage.digital_signature:
        raise _Unusable(Verdict.INVALID, f"{TLS_CERT_KEY} does not allow digitalSignature (KeyUsage)")


def _check_signed_by(certificate: x509.Certificate, ca: x509.Certificate) -> None:
    try:
        certificate.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        raise _Unusable(Verdict.FOREIGN, f"{TLS_CERT_KEY} is not signed by the CA in {CA_CERT_KEY}") from None


def _ca_finding(existing: ExistingCertificates, now: datetime) -> tuple[Finding, x509.Certificate | None]:
    try:
        certificate, _ = _load_pair(existing.ca_certificate, existing.ca_key, CA_CERT_KEY, CA_KEY_KEY)
        _check_ca_usage(certificate)
        _check_validity(certificate, CA_CERT_KEY, now)
    except _Unusable as unusable:
        return unusable.finding, None
    return Finding(Verdict.VALID, f"valid until {_timestamp(certificate.not_valid_after_utc)}"), certificate


def _serving_finding(
    existing: ExistingCertificates, ca: x509.Certificate, dns_names: Sequence[str], now: datetime
) -> Finding:
    try:
        if existing.serving_certificate is None:
            raise _Unusable(Verdict.MISSING, f"no {TLS_CERT_KEY} found")
        try:
            certificate = x509.load_pem_x509_certificate(existing.serving_certificate)
        except ValueError:
            raise _Unusable(Verdict.INVALID, f"{TLS_CERT_KEY} is not a PEM certificate") from None
        # Signed by the CA is asked first: a foreign certificate replaces the CA too (rule 2).
        _check_signed_by(certificate, ca)
        _load_pair(existing.serving_certificate, existing.serving_key, TLS_CERT_KEY, TLS_KEY_KEY)
        _check_validity(certificate, TLS_CERT_KEY, now)
        _check_serving_usage(certificate, dns_names)
    except _Unusable as unusable:
        return unusable.finding
    return Finding(Verdict.VALID, f"valid until {_timestamp(certificate.not_valid_after_utc)}")


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None:
        raise ValueError("the current time must be timezone-aware")
    return now.astimezone(UTC)


def decide_regeneration(
    existing: ExistingCertificates, dns_names: Sequence[str], now: datetime
) -> RegenerationDecision:
    """Which of the two certificates to keep, per the reference's regeneration table."""
    now = _utc(now)
    ca_finding, ca_certificate = _ca_finding(existing, now)
    if ca_certificate is None:
        if existing.serving_certificate is None:
            return RegenerationDecision(ca_finding, Finding(Verdict.MISSING, f"no {TLS_CERT_KEY} found"))
        return RegenerationDecision(ca_finding, Finding(Verdict.CA_REPLACED, "signed by the new CA"))
    return RegenerationDecision(ca_finding, _serving_finding(existing, ca_certificate, dns_names, now))


# --- generation ------------------------------------------------------------------------------


def _fresh_key(new_key: KeyFactory) -> rsa.RSAPrivateKey:
    key = new_key()
    if not isinstance(key, rsa.RSAPrivateKey) or key.key_size != KEY_SIZE:
        raise ValueError(f"the key factory must return {KEY_SIZE}-bit RSA keys")
    return key


def _serial_number(key: rsa.RSAPrivateKey, not_before: datetime, names: Sequence[str]) -> int:
    """A serial derived from the key, start and names: unique per certificate, yet reproducible."""
    digest = hashlib.sha256(_public_key_der(key.public_key()))
    digest.update(_timestamp(not_before).encode())
    digest.update("\0".join(names).encode())
    return int.from_bytes(digest.digest()[:16], "big") | 1  # positive, non-zero, 128 bits


def _common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def _key_usage(*, digital_signature: bool, key_encipherment: bool, key_cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=False,
        encipher_only=False,
        decipher_only=False,
    )


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def issue_ca_certificate(key: rsa.RSAPrivateKey, common_name: str, now: datetime) -> bytes:
    """A self-signed CA (87600h from `now`) for `key`, as PEM."""
    start = _utc(now).replace(microsecond=0)
    subject = _common_name(common_name)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(_serial_number(key, start, [common_name]))
        .not_valid_before(start)
        .not_valid_after(start + CA_VALIDITY)
        # Path length 0: this CA signs the serving certificate and no other CA.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            _key_usage(digital_signature=True, key_encipherment=False, key_cert_sign=True), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return _pem(builder.sign(key, hashes.SHA256()))


def issue_serving_certificate(
    ca_certificate: bytes, ca_key: bytes, key: rsa.RSAPrivateKey, dns_names: Sequence[str], now: datetime
) -> bytes:
    """A serving certificate (8760h from `now`) for `key` and `dns_names`, signed by the CA, as PEM."""
    if not dns_names:
        raise ValueError("a serving certificate needs at least one DNS name")
    ca, signer = _load_pair(ca_certificate, ca_key, CA_CERT_KEY, CA_KEY_KEY)
    start = _utc(now).replace(microsecond=0)
    # The CN is informational (clients match SANs); RFC 5280 caps it at 64 characters.
    common_name = dns_names[0] if len(dns_names[0]) <= MAX_COMMON_NAME else dns_names[0][:MAX_COMMON_NAME]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_common_name(common_name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(_serial_number(key, start, dns_names))
        .not_valid_before(start)
        .not_valid_after(start + SERVING_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            _key_usage(digital_signature=True, key_encipherment=True, key_cert_sign=False), critical=True
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False
        )
    )
    return _pem(builder.sign(signer, hashes.SHA256()))


def _notes(decision: RegenerationDecision, plan: CertificatePlan) -> list[Note]:
    def note(finding: Finding, regenerated: bool, what: str, secret: str) -> Note:
        subject = f"Secret {plan.namespace}/{secret}"
        if not regenerated:
            return Note(Level.INFO, "CertificateReused", subject, f"{what} reused: {finding.detail}")
        level = Level.WARNING if finding.verdict in {Verdict.INVALID, Verdict.FOREIGN} else Level.INFO
        if finding.verdict is Verdict.MISSING:
            return Note(level, "CertificateGenerated", subject, f"{what} generated: {finding.detail}")
        return Note(level, "CertificateRegenerated", subject, f"{what} regenerated: {finding.detail}")

    ca_finding = decision.ca
    if decision.serving.verdict is Verdict.FOREIGN:
        ca_finding = Finding(
            Verdict.FOREIGN, f"the certificate in {plan.serving_secret} was not signed by it"
        )
    return [
        note(ca_finding, decision.regenerate_ca, "CA", plan.ca_secret),
        note(decision.serving, decision.regenerate_serving, "serving certificate", plan.serving_secret),
    ]


def ensure_webhook_certificates(
    existing: ExistingCertificates,
    plan: CertificatePlan,
    dns_names: Sequence[str],
    now: datetime,
    new_key: KeyFactory,
) -> tuple[WebhookCertificates, list[Note]]:
    """Reuse or regenerate the CA and serving certificate; notes say which and why."""
    decision = decide_regeneration(existing, dns_names, now)
    if decision.regenerate_ca:
        ca_key = _fresh_key(new_key)
        ca_key_pem = _key_pem(ca_key)
        ca_pem = issue_ca_certificate(ca_key, f"{plan.prefix}-ca", now)
    else:
        # Checked by decide_regeneration: both are present and belong together.
        ca_pem, ca_key_pem = existing.ca_certificate or b"", existing.ca_key or b""
    if decision.regenerate_serving:
        serving_key = _fresh_key(new_key)
        serving_key_pem = _key_pem(serving_key)
        serving_pem = issue_serving_certificate(ca_pem, ca_key_pem, serving_key, dns_names, now)
    else:
        serving_pem, serving_key_pem = existing.serving_certificate or b"", existing.serving_key or b""
    certificates = WebhookCertificates(ca_pem, ca_key_pem, serving_pem, serving_key_pem)
    return certificates, _notes(decision, plan)


# --- the manifest transform ------------------------------------------------------------------


def served_webhook_services(manifests: list[Manifest], plan: CertificatePlan) -> list[tuple[str, str]]:
    """(name, namespace) of every Service a webhook calls that the stream itself deploys, sorted."""
    deployed = {
        (name_of(m.body), namespace_of(m.body) or plan.namespace)
        for m in manifests
        if kind_of(m.body) == "Service"
    }
    return [host for host in webhook_service_hosts(manifests, plan.namespace) if host in deployed]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _secret(name: str, namespace: str, secret_type: str, data: dict[str, bytes]) -> Manifest:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": secret_type,
        "data": {key: _b64(value) for key, value in data.items()},
    }
    return Manifest(body, ORIGIN)


def certificate_secrets(plan: CertificatePlan, certificates: WebhookCertificates) -> list[Manifest]:
    """`ca-server-cert` then `webhook-server-cert`, with BTP Manager's keys."""
    return [
        _secret(
            plan.ca_secret,
            plan.namespace,
            "Opaque",
            {CA_CERT_KEY: certificates.ca_certificate, CA_KEY_KEY: certificates.ca_key},
        ),
        _secret(
            plan.serving_secret,
            plan.namespace,
            "kubernetes.io/tls",
            {TLS_CERT_KEY: certificates.serving_certificate, TLS_KEY_KEY: certificates.serving_key},
        ),
    ]


def install_webhook_certificates(
    manifests: list[Manifest],
    plan: CertificatePlan,
    certificates: WebhookCertificates,
    services: list[tuple[str, str]],
) -> list[Manifest]:
    """Inject the CA into every webhook calling `services` and append the two Secrets.

    Whatever webhook TLS the chart brought (its certificate Secrets, a cert-manager chain, CA
    injection annotations) is removed first, so modes don't mix. Rewritten objects are changed in
    place and keep their order; the Secrets come last, CA first.
    """
    served = set(services)
    kept = strip_webhook_certificate_objects(manifests, plan, services)
    ca_bundle = _b64(certificates.ca_certificate)
    for manifest in kept:
        for config in webhook_client_configs(manifest.body):
            # A URL or a Service the stream does not deploy: someone else's server and CA.
            if service_host(config, plan.namespace) in served:
                config["caBundle"] = ca_bundle
    return kept + certificate_secrets(plan, certificates)


def issue_webhook_certificates_self_signed(
    manifests: list[Manifest],
    plan: CertificatePlan,
    existing: ExistingCertificates,
    now: datetime,
    new_key: KeyFactory,
) -> tuple[list[Manifest], list[Note]]:
    """The whole self-signed mode over a stream: find the Services, reuse or generate, install."""
    services = served_webhook_services(manifests, plan)
    if not services:
        note = Note(
            Level.INFO,
            "NoWebhookServices",
            f"namespace {plan.namespace}",
            "no webhook calls a Service of this stream: no webhook certificates generated",
        )
        return manifests, [note]
    certificates, notes = ensure_webhook_certificates(
        existing, plan, service_dns_names(services), now, new_key
    )
    return install_webhook_certificates(manifests, plan, certificates, services), notes
