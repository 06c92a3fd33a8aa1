"""CAP objects in a Helm stream (post-render): which objects the domain reads, and how its apps
are ordered against each other in one Helm release.

A render puts every application, domain and tenant into an app of its own and orders the apps
through the version gate: a tenant's operation Jobs read the ConfigMap its application's app
creates once the version is healthy. Helm runs every hook of a release in one sequence, so the
tenants' hook Jobs get a later tier than their applications' (a tenant Job that Helm waited for
before the application's content Jobs ran would hold the release up behind a version that is not
there yet).
"""

from __future__ import annotations

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.domains.cap.model import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CLUSTER_DOMAIN,
    DOMAIN,
)
from btp_gitops.generator.domains.cap.tenants.model import CAP_TENANT
from btp_gitops.generator.domains.cap.tenants.names import TENANT_APP_PREFIX

SOURCE_KINDS = frozenset({CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT, DOMAIN, CLUSTER_DOMAIN})
CLUSTER_SCOPED_KINDS = frozenset({CLUSTER_DOMAIN})
APPLICATION_TIER = 0
TENANT_TIER = 1


def is_cap_source(body: KubeObject) -> bool:
    """True for the objects a CAP render reads (CAP Operator's kinds the user writes)."""
    return (body.get("apiVersion"), body.get("kind")) in SOURCE_KINDS


def release_tier(app: AppRender) -> int:
    """The order of an app's hooks in one Helm release: applications and domains, then tenants."""
    return TENANT_TIER if app.app.startswith(TENANT_APP_PREFIX) else APPLICATION_TIER
