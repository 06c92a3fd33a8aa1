"""The reuse and regeneration table of self-signed mode (BTP Manager's rules), one row per case.

CA missing, invalid or expiring within 168h -> both regenerated; serving certificate not signed by
the CA -> both; serving certificate missing or invalid -> only it, signed by the existing CA;
otherwise both kept byte for byte. Each row states which of the two must be regenerated, the
verdicts, and checks that the outcome verifies (chain, keys, SANs, validity) with `cryptography`
directly. Existing certificates are built by tests/certificates/builders.py, not by the product.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from btp_gitops.generator.core.report import Level
from btp_gitops.generator.transforms.self_signed_certificates import (
    NO_EXISTING_CERTIFICATES,
    ExistingCertificates,
    KeyFactory,
    Verdict,
    decide_regeneration,
    ensure_webhook_certificates,
)
from tests.certificates.builders import SERVER_AND_CLIENT, key_pem
from tests.certificates.builders import build as build_certificate
from tests.certificates.conftest import NOW, PLAN, SERVICE_NAMES, KeyPool
from tests.certificates.verify import assert_usable

HOUR = timedelta(hours=1)
CA_LIFE, SERVING_LIFE = 87600 * HOUR, 8760 * HOUR
NEW_SERVICE = ["second-webhook.kyma-system.svc", "second-webhook.kyma-system"]


def ca_pair(pool: KeyPool, start_offset: timedelta, key: str = "ca", ca: bool = True) -> tuple[bytes, bytes]:
    pem = build_certificate(pool.role(key), f"{key}-authority", NOW + start_offset, CA_LIFE, ca=ca)
    return pem, key_pem(pool.role(key))


def serving_pem(
    pool: KeyPool,
    start_offset: timedelta = -10 * HOUR,
    signer: str = "ca",
    sans: list[str] = SERVICE_NAMES,
    extended_usages: tuple[x509.ObjectIdentifier, ...] = SERVER_AND_CLIENT,
) -> bytes:
    ca_pem, _ = ca_pair(pool, -1000 * HOUR, key=signer)
    return build_certificate(
        pool.role("serving"),
        sans[0],
        NOW + start_offset,
        SERVING_LIFE,
        signer=(ca_pem, pool.role(signer)),
        sans=sans,
        extended_usages=extended_usages,
    )


def valid(pool: KeyPool) -> ExistingCertificates:
    ca_pem, ca_key = ca_pair(pool, -1000 * HOUR)
    return ExistingCertificates(ca_pem, ca_key, serving_pem(pool), key_pem(pool.role("serving")))


def with_ca(start_offset: timedelta, ca: bool = True) -> Callable[[KeyPool], ExistingCertificates]:
    def make(pool: KeyPool) -> ExistingCertificates:
        ca_pem, ca_key = ca_pair(pool, start_offset, ca=ca)
        return dataclasses.replace(valid(pool), ca_certificate=ca_pem, ca_key=ca_key)

    return make


def changed(**fields: Callable[[KeyPool], bytes | None]) -> Callable[[KeyPool], ExistingCertificates]:
    def make(pool: KeyPool) -> ExistingCertificates:
        return dataclasses.replace(valid(pool), **{name: value(pool) for name, value in fields.items()})

    return make


MALFORMED_PEM = b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"

BOTH, SERVING_ONLY, NONE = (True, True), (False, True), (False, False)


def row(
    name: str,
    existing: Callable[[KeyPool], ExistingCertificates],
    regenerated: tuple[bool, bool],
    verdicts: tuple[Verdict, Verdict],
    why: str,
    required: list[str] = SERVICE_NAMES,
) -> object:
    return pytest.param(existing, required, regenerated, verdicts, why, id=name)


def serving(make: Callable[[KeyPool], bytes | None]) -> Callable[[KeyPool], ExistingCertificates]:
    return changed(serving_certificate=make)


V = Verdict
ROWS = [
    row(
        "nothing-existing",
        lambda pool: NO_EXISTING_CERTIFICATES,
        BOTH,
        (V.MISSING, V.MISSING),
        "no ca.crt found",
    ),
    row("all-valid", valid, NONE, (V.VALID, V.VALID), "valid until 2027-06-01T02:00:00Z"),
    row(
        "ca-expiring-within-168h",
        with_ca(-CA_LIFE + 100 * HOUR),
        BOTH,
        (V.EXPIRING, V.CA_REPLACED),
        "ca.crt expires at 2026-06-05T16:00:00Z, within 168h",
    ),
    row(
        "ca-expiring-in-169h-is-kept",
        with_ca(-CA_LIFE + 169 * HOUR),
        NONE,
        (V.VALID, V.VALID),
        "valid until 2026-06-08T13:00:00Z",
    ),
    row(
        "ca-expired",
        with_ca(-CA_LIFE - HOUR),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.crt expired at 2026-06-01T11:00:00Z",
    ),
    row(
        "ca-not-yet-valid",
        with_ca(HOUR),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.crt is not valid before 2026-06-01T13:00:00Z",
    ),
    row(
        "ca-malformed-pem",
        changed(ca_certificate=lambda pool: MALFORMED_PEM),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.crt is not a PEM certificate",
    ),
    row(
        "ca-key-not-matching",
        changed(ca_key=lambda pool: key_pem(pool.role("serving"))),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.key is not the key of ca.crt",
    ),
    row(
        "ca-key-missing",
        changed(ca_key=lambda pool: None),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.key is missing",
    ),
    row(
        "ca-not-a-ca",
        with_ca(-1000 * HOUR, ca=False),
        BOTH,
        (V.INVALID, V.CA_REPLACED),
        "ca.crt is not a CA certificate (BasicConstraints)",
    ),
    row(
        "ca-missing-serving-present",
        changed(ca_certificate=lambda pool: None, ca_key=lambda pool: None),
        BOTH,
        (V.MISSING, V.CA_REPLACED),
        "no ca.crt found",
    ),
    row(
        "serving-missing",
        changed(serving_certificate=lambda pool: None, serving_key=lambda pool: None),
        SERVING_ONLY,
        (V.VALID, V.MISSING),
        "no tls.crt found",
    ),
    row(
        "serving-expired",
        serving(lambda pool: serving_pem(pool, -SERVING_LIFE - HOUR)),
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.crt expired at 2026-06-01T11:00:00Z",
    ),
    row(
        "serving-expiring-within-168h",
        serving(lambda pool: serving_pem(pool, -SERVING_LIFE + 24 * HOUR)),
        SERVING_ONLY,
        (V.VALID, V.EXPIRING),
        "tls.crt expires at 2026-06-02T12:00:00Z, within 168h",
    ),
    row(
        "serving-not-yet-valid",
        serving(lambda pool: serving_pem(pool, HOUR)),
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.crt is not valid before 2026-06-01T13:00:00Z",
    ),
    row(
        "serving-malformed-pem",
        serving(lambda pool: MALFORMED_PEM),
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.crt is not a PEM certificate",
    ),
    row(
        "serving-key-not-matching",
        changed(serving_key=lambda pool: key_pem(pool.role("foreign_ca"))),
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.key is not the key of tls.crt",
    ),
    row(
        "serving-signed-by-foreign-ca",
        serving(lambda pool: serving_pem(pool, signer="foreign_ca")),
        BOTH,
        (V.VALID, V.FOREIGN),
        "tls.crt is not signed by the CA in ca.crt",
    ),
    row(
        "serving-sans-miss-a-new-service",
        valid,
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.crt does not cover second-webhook.kyma-system.svc, second-webhook.kyma-system",
        required=SERVICE_NAMES + NEW_SERVICE,
    ),
    row(
        "serving-without-server-auth",
        serving(lambda pool: serving_pem(pool, extended_usages=(ExtendedKeyUsageOID.CLIENT_AUTH,))),
        SERVING_ONLY,
        (V.VALID, V.INVALID),
        "tls.crt does not allow serverAuth (ExtendedKeyUsage)",
    ),
]


@pytest.mark.parametrize(("existing_for", "required", "regenerated", "verdicts", "why"), ROWS)
def test_regeneration_table(
    key_pool: KeyPool,
    new_key: KeyFactory,
    existing_for: Callable[[KeyPool], ExistingCertificates],
    required: list[str],
    regenerated: tuple[bool, bool],
    verdicts: tuple[Verdict, Verdict],
    why: str,
) -> None:
    existing = existing_for(key_pool)
    decision = decide_regeneration(existing, required, NOW)
    assert (decision.ca.verdict, decision.serving.verdict) == verdicts
    assert (decision.regenerate_ca, decision.regenerate_serving) == regenerated
    assert why in (decision.ca.detail, decision.serving.detail)

    result, notes = ensure_webhook_certificates(existing, PLAN, required, NOW, new_key)

    ca_kept = (result.ca_certificate, result.ca_key) == (existing.ca_certificate, existing.ca_key)
    serving_kept = (result.serving_certificate, result.serving_key) == (
        existing.serving_certificate,
        existing.serving_key,
    )
    assert (not ca_kept, not serving_kept) == regenerated
    if regenerated[1]:
        assert result.serving_key != existing.serving_key, "a regenerated certificate gets a new key"
    assert_usable(result, required, NOW)

    assert [(n.subject, n.reason) for n in notes] == [
        ("Secret kyma-system/ca-server-cert", expected_reason(regenerated[0], verdicts[0])),
        ("Secret kyma-system/webhook-server-cert", expected_reason(regenerated[1], verdicts[1])),
    ]
    warned = Verdict.INVALID in verdicts or Verdict.FOREIGN in verdicts
    assert any(n.level is Level.WARNING for n in notes) == warned
    said = " ".join(n.message for n in notes)
    for key in (existing.ca_key, existing.serving_key, result.ca_key, result.serving_key):
        assert key is None or key.decode().splitlines()[1] not in said


def expected_reason(regenerate: bool, verdict: Verdict) -> str:
    if not regenerate:
        return "CertificateReused"
    return "CertificateGenerated" if verdict is Verdict.MISSING else "CertificateRegenerated"
