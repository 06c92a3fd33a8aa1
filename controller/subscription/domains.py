"""The domain of a tenant's application URL (`https://<subdomain>.<domain>`), as CAP Operator picks it.

The URL is what the subscription server answers the SaaS registry (or subscription manager) with
and what the completion callback reports. Its domain, in this order:

1. `subscriptionParams.subscriptionDomain` of the subscribe, when it is the host of a Domain or
   ClusterDomain the application uses; any other value is refused with 406 (`DomainNotServed`)
   before anything is written;
2. else the application's `sme.sap.com/subscription-domain` annotation;
3. else the host of the first `spec.domainRefs` entry (for the deprecated `spec.domains`: its
   primary), "" when the application has none or that Domain is not in the sources. CAP Operator
   then still builds `https://<subdomain>.`, and so does `application_url`.

The domains an application uses come from the source repository (`resolve_domains`): the Domain
documents of its namespace and the ClusterDomains, by kind and name, as a render resolves them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from btp_gitops.controller.clients.targets import AppTarget
from btp_gitops.controller.errors import PermanentError
from btp_gitops.generator.core import SourceDocument, get_path
from btp_gitops.generator.domains.cap import CLUSTER_DOMAIN, DOMAIN


class DomainNotServed(PermanentError):
    """A subscriptionDomain that is none of the application's domains (406: CAP Operator's answer)."""

    reason = "DomainNotServed"


@dataclass(frozen=True, slots=True)
class ApplicationDomains:
    """The hosts of the domains an application uses, in the order of its domain references."""

    hosts: tuple[str, ...] = ()  # resolved ones only
    first: str = ""  # the host of the first reference, "" when it has none or it is not found

    def serves(self, host: str) -> bool:
        return host in self.hosts


def resolve_domains(app_body: Mapping[str, Any], documents: Iterable[SourceDocument]) -> ApplicationDomains:
    """The domains of a CAPApplication (`app_body`) among `documents` (its namespace's Domains and
    the ClusterDomains; others are ignored)."""
    namespace = str(get_path(app_body, "metadata", "namespace") or "")
    refs = get_path(app_body, "spec", "domainRefs")
    if isinstance(refs, list) and refs:
        hosts = _domain_hosts(documents, namespace)
        found = [hosts.get((str(r.get("kind")), str(r.get("name")))) for r in refs if isinstance(r, dict)]
        return ApplicationDomains(tuple(h for h in found if h), (found[0] or "") if found else "")
    legacy = get_path(app_body, "spec", "domains")
    if isinstance(legacy, dict) and legacy.get("primary"):
        secondary = legacy.get("secondary")
        others = [str(h) for h in secondary if h] if isinstance(secondary, list) else []
        primary = str(legacy["primary"])
        return ApplicationDomains((primary, *others), primary)
    return ApplicationDomains()


def _domain_hosts(documents: Iterable[SourceDocument], namespace: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> host of the Domains in `namespace` and of every ClusterDomain; the first of
    a name wins, as in a render."""
    hosts: dict[tuple[str, str], str] = {}
    for document in documents:
        kind = (document.api_version, document.kind)
        name = str(get_path(document.body, "metadata", "name") or "")
        host = str(get_path(document.body, "spec", "domain") or "")
        if kind == DOMAIN and str(get_path(document.body, "metadata", "namespace") or "") != namespace:
            continue
        if kind in (DOMAIN, CLUSTER_DOMAIN) and name and host:
            hosts.setdefault((document.kind, name), host)
    return hosts


def url_domain(requested: str, app: AppTarget, domains: ApplicationDomains) -> str:
    """The domain of a subscribe's application URL (`requested`: its subscriptionDomain, "" if none)."""
    if requested:
        if not domains.serves(requested):
            raise DomainNotServed(
                f"subscriptionParams.subscriptionDomain {requested!r} is none of the domains of "
                f"CAPApplication {app.namespace}/{app.name}"
            )
        return requested
    return app.subscription_domain or domains.first


def application_url(sub_domain: str, domain: str) -> str:
    """CAP Operator's URL: `https://<subdomain>.<domain>`, the domain empty when there is none."""
    return f"https://{sub_domain}.{domain}"
