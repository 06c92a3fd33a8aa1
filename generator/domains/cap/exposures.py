"""Service exposures: a VirtualService per subdomain of the application's current version.

The current version is the highest `spec.version` (semver) of the application: CAP Operator
switched exposures to a new version once it was Ready, and the VirtualServices are in
`Stage.ROUTING`, applied only after the versions' workloads and content jobs are healthy. Each
VirtualService serves `<subDomain>.<domain>` on every domain of the application, through its
Gateway, with one route per exposure route: `uri.prefix = path` (default "/") to
`<cav>-<wl>-svc.<ns>.svc.cluster.local:<port>`, in the order written.
"""

from __future__ import annotations

import semver

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.identity import (
    CAV_VERSION,
    application_labels,
    exposure_virtual_service_name,
    gateway_reference,
    service_host,
)
from btp_gitops.generator.domains.cap.model import Application, Domain, ServiceExposure, Version


def semantic_version(text: str) -> semver.Version:
    """CAP versions as CAP Operator compares them: a leading `v` and missing parts are allowed."""
    return semver.Version.parse(text.removeprefix("v"), optional_minor_and_patch=True)


def current_version(versions: list[Version]) -> Version | None:
    return max(versions, key=lambda v: semantic_version(v.version), default=None)


def _route(version: Version, exposure: ServiceExposure) -> list[dict[str, object]]:
    routes: list[dict[str, object]] = []
    for route in exposure.routes:
        workload = version.workload(route.workload)
        if workload is None:  # refused by validation; kept total for the type checker
            continue
        routes.append(
            {
                "match": [{"uri": {"prefix": route.path}}],
                "route": [
                    {
                        "destination": {
                            "host": service_host(version, workload),
                            "port": {"number": route.port},
                        },
                        "weight": 100,
                    }
                ],
            }
        )
    return routes


def exposure_virtual_services(app: Application, version: Version, domains: list[Domain]) -> list[KubeObject]:
    labels, annotations = application_labels(app)
    labels[CAV_VERSION] = version.version
    services = []
    for exposure in version.service_exposures:
        services.append(
            {
                "apiVersion": "networking.istio.io/v1",
                "kind": "VirtualService",
                "metadata": {
                    "name": exposure_virtual_service_name(app, exposure.sub_domain),
                    "namespace": app.namespace,
                    "labels": dict(labels),
                    "annotations": dict(annotations),
                },
                "spec": {
                    "gateways": [gateway_reference(d) for d in domains],
                    "hosts": [f"{exposure.sub_domain}.{d.host}" for d in domains],
                    "http": _route(version, exposure),
                },
            }
        )
    return services
