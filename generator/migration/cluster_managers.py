"""Which certificate managers and which DNS manager a cluster runs, from the CustomResourceDefinitions
import reads by name (migration.kinds): cert-manager's `certificates.cert-manager.io`, Gardener
cert-management's `certificates.cert.gardener.cloud` and Gardener's DNS controller's
`dnsentries.dns.gardener.cloud`.

The imported sources must name managers the cluster has. BTP Manager issued its webhook
certificates itself, and a render has cert-manager or Gardener cert-management issue them
(`spec.certificates.mode`). CAP Operator's chart chose its certificate manager and its DNS manager
from the APIs the cluster serves (CERT_MANAGER, DNS_MANAGER), and with DNS_MANAGER=kubernetes it
creates no DNS entries at all. A CRD among the objects read is installed; one not among them is
not known to be: not installed, not readable with the credentials, or not in the dumps. Gardener
DNS is taken as not installed only on a cluster whose certificates cert-manager issues and
Gardener does not (`kubernetes_dns`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from btp_gitops.generator.migration.kinds import CERT_MANAGER_CRD, GARDENER_CERT_CRD, GARDENER_DNS_CRD
from btp_gitops.generator.migration.model import LiveObject

CERT_MANAGER = "cert-manager"
GARDENER = "gardener"
KUBERNETES_DNS = "kubernetes"  # CAP Operator's DNS_MANAGER without Gardener's DNS API

_MANAGER_CRDS = (CERT_MANAGER_CRD, GARDENER_CERT_CRD, GARDENER_DNS_CRD)


@dataclass(frozen=True, slots=True)
class InstalledManagers:
    """The managers whose CRD was among the objects read."""

    cert_manager: bool = False
    gardener: bool = False  # Gardener cert-management
    gardener_dns: bool = False  # Gardener's DNS controller

    @property
    def kubernetes_dns(self) -> bool:
        """Whether CAP Operator's chart set DNS_MANAGER=kubernetes, as far as the CRDs read tell:
        Gardener's DNSEntry CRD not read, cert-manager's read and Gardener's Certificate CRD not (a
        cluster that is no Gardener one). Not when Gardener's Certificate CRD was read: dumps of a
        Gardener cluster made without the DNSEntry CRD (as the import's docs said to before it read
        one) must not lose the DNS entries CAP Operator made there."""
        return self.cert_manager and not self.gardener and not self.gardener_dns


def _is_manager_crd(live: LiveObject) -> bool:
    return any(crd.is_this(live.api_version, live.kind, live.namespace, live.name) for crd in _MANAGER_CRDS)


def installed_managers(objects: Iterable[LiveObject]) -> InstalledManagers:
    found = {live.name for live in objects if _is_manager_crd(live)}
    return InstalledManagers(
        cert_manager=CERT_MANAGER_CRD.name in found,
        gardener=GARDENER_CERT_CRD.name in found,
        gardener_dns=GARDENER_DNS_CRD.name in found,
    )
