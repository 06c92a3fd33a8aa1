"""Fixtures for the webhook certificate tests: real RSA-4096 keys, a fixed clock, one plan.

Generating an RSA-4096 key takes about a second, so the session shares a small pool of real
keys: fixed roles for certificates a test builds as "existing" ones, and a key factory that
hands the product the others, in a fixed order, so every run produces the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import cycle

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from btp_gitops.generator.transforms.certificates import CertificatePlan
from btp_gitops.generator.transforms.self_signed_certificates import KeyFactory
from tests.render.conftest import make_source  # noqa: F401  (the render tests' fixture, used here too)

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
PLAN = CertificatePlan(prefix="sap-btp-operator", namespace="kyma-system")
SERVICE_NAMES = [
    "sap-btp-operator-webhook-service.kyma-system.svc",
    "sap-btp-operator-webhook-service.kyma-system",
]


class KeyPool:
    """Real 4096-bit keys by role; `factory()` yields the spare ones, never the role keys."""

    ROLES = ("ca", "serving", "foreign_ca")
    SPARE = 2

    def __init__(self) -> None:
        self.keys = [rsa.generate_private_key(65537, 4096) for _ in range(len(self.ROLES) + self.SPARE)]

    def role(self, name: str) -> rsa.RSAPrivateKey:
        return self.keys[self.ROLES.index(name)]

    def factory(self) -> KeyFactory:
        spares: Iterator[rsa.RSAPrivateKey] = cycle(self.keys[len(self.ROLES) :])
        return lambda: next(spares)


@pytest.fixture(scope="session")
def key_pool() -> KeyPool:
    return KeyPool()


@pytest.fixture
def new_key(key_pool: KeyPool) -> KeyFactory:
    return key_pool.factory()
