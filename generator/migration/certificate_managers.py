"""Which certificate managers a cluster runs, from the CustomResourceDefinitions import reads by
name (migration.kinds: `certificates.cert-manager.io`, `certificates.cert.gardener.cloud`).

The imported sources must name a certificate manager the cluster has: BTP Manager issued its
webhook certificates itself, and a render has cert-manager or Gardener cert-management issue them
(`spec.certificates.mode`). A CRD among the objects read is installed; one not among them is not
known to be: not installed, not readable with the credentials, or not in the dumps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from btp_gitops.generator.migration.kinds import CERT_MANAGER_CRD, GARDENER_CERT_CRD
from btp_gitops.generator.migration.model import LiveObject

CERT_MANAGER = "cert-manager"
GARDENER = "gardener"


@dataclass(frozen=True, slots=True)
class CertificateManagers:
    """The certificate managers whose Certificate CRD was among the objects read."""

    cert_manager: bool = False
    gardener: bool = False


def is_manager_crd(live: LiveObject) -> bool:
    return any(
        crd.is_this(live.api_version, live.kind, live.namespace, live.name)
        for crd in (CERT_MANAGER_CRD, GARDENER_CERT_CRD)
    )


def installed_managers(objects: Iterable[LiveObject]) -> CertificateManagers:
    found = {live.name for live in objects if is_manager_crd(live)}
    return CertificateManagers(
        cert_manager=CERT_MANAGER_CRD.name in found, gardener=GARDENER_CERT_CRD.name in found
    )
