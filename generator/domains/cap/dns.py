"""Which DNS records a domain needs, per DNS mode (as CAP Operator's https://sap.github.io/cap-operator/docs/usage/domain-management/).

    None       no record
    Wildcard   `*.<domain>` -> dnsTarget
    Subdomain  `<subDomain>.<domain>` -> dnsTarget, for every subdomain served on the domain
    Custom     each of `dnsTemplates`: a name and target with `{{.domain}}`, `{{.dnsTarget}}` and
               `{{.subDomain}}`; a template whose name uses `{{.subDomain}}` gives one record per
               subdomain, any other one record

CAP Operator expands Custom templates with Go templates and Sprig functions. Offline, btp-gitops
expands the three variables (with or without spaces inside the braces) and refuses any other
template action rather than guess what it would produce.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from btp_gitops.generator.domains.cap.model import DnsMode, Domain

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
VARIABLES = ("domain", "dnsTarget", "subDomain")


@dataclass(frozen=True, slots=True, order=True)
class DnsRecord:
    name: str
    target: str


def template_actions(text: str) -> list[str]:
    """The actions inside `{{ }}` of a template, trimmed."""
    return [match.group(1) for match in _ACTION.finditer(text)]


def unsupported_actions(text: str) -> list[str]:
    return [action for action in template_actions(text) if action.lstrip(".") not in VARIABLES]


def uses_subdomain(text: str) -> bool:
    return ".subDomain" in template_actions(text)


def expand(text: str, values: dict[str, str]) -> str:
    return _ACTION.sub(lambda match: values.get(match.group(1).lstrip("."), match.group(0)), text)


def dns_records(domain: Domain, subdomains: Iterable[str]) -> list[DnsRecord]:
    """Every record the domain needs, sorted; `subdomains` are those served on it."""
    served = sorted(set(subdomains))
    target = domain.dns_target
    if domain.dns_mode == DnsMode.WILDCARD:
        records = [DnsRecord(f"*.{domain.host}", target)]
    elif domain.dns_mode == DnsMode.SUBDOMAIN:
        records = [DnsRecord(f"{sub}.{domain.host}", target) for sub in served]
    elif domain.dns_mode == DnsMode.CUSTOM:
        records = []
        for template in domain.dns_templates:
            for sub in served if uses_subdomain(template.name) else [""]:
                values = {"domain": domain.host, "dnsTarget": target, "subDomain": sub}
                records.append(DnsRecord(expand(template.name, values), expand(template.target, values)))
    else:
        records = []
    return sorted(set(records))
