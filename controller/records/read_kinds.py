"""The kinds of documents the tenant-record index reads from the source repository.

CAP applications, versions and tenants make the records; Domains and ClusterDomains are read
too, so that the subscription server can tell which hosts an application is served on
(`controller.subscription.domains`) without a render.
"""

from __future__ import annotations

from btp_gitops.generator.domains.cap import (
    CAP_APPLICATION,
    CAP_APPLICATION_VERSION,
    CAP_TENANT,
    CLUSTER_DOMAIN,
    DOMAIN,
)

READ_KINDS = frozenset({CAP_APPLICATION, CAP_APPLICATION_VERSION, CAP_TENANT, DOMAIN, CLUSTER_DOMAIN})
