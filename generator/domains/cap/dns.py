"""Which DNS records a domain needs, per DNS mode (as CAP Operator's https://sap.github.io/cap-operator/docs/usage/domain-management/).

    None       no record
    Wildcard   `*.<domain>` -> dnsTarget
    Subdomain  `<subDomain>.<domain>` -> dnsTarget, for every subdomain served on the domain
    Custom     each of `dnsTemplates`: a name and target rendered as Go templates with `.domain`,
               `.dnsTarget` and `.subDomain` and Sprig functions (`templates`); a template whose
               name reads `.subDomain` gives one record per subdomain, any other one record

Templates are checked by the domain rules (validation) with the domain's values, so a refused one
never gets here; one that a particular subdomain makes fail (a value past the size bound) is
refused here, at its field, rather than rendered half.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.domains.cap.model import DnsMode, Domain
from btp_gitops.generator.domains.cap.templates import TemplateError, parse


@dataclass(frozen=True, slots=True, order=True)
class DnsRecord:
    name: str
    target: str


def uses_subdomain(text: str) -> bool:
    """The template reads `.subDomain` (False for one that does not parse: the rules refuse it)."""
    try:
        return "subDomain" in parse(text).fields
    except TemplateError:
        return False


def template_values(domain: Domain, sub_domain: str) -> dict[str, str]:
    return {"domain": domain.host, "dnsTarget": domain.dns_target, "subDomain": sub_domain}


def template_record(domain: Domain, index: int, sub_domain: str) -> DnsRecord:
    """The record of `dnsTemplates[index]` for one subdomain ("" for a template without one)."""
    template = domain.dns_templates[index]
    values = template_values(domain, sub_domain)
    rendered = []
    for field, text in (("name", template.name), ("target", template.target)):
        try:
            rendered.append(parse(text).render(values))
        except TemplateError as error:
            where = domain.field_path(f"dnsTemplates[{index}].{field}")
            problem = problem_at(domain.source, where, f"subdomain {sub_domain}: {error}")
            raise InvalidSpec("invalid CAP domain", [problem]) from None
    return DnsRecord(*rendered)


def dns_records(domain: Domain, subdomains: Iterable[str]) -> list[DnsRecord]:
    """Every record the domain needs, sorted; `subdomains` are those served on it."""
    if not domain.makes_dns_entries:
        return []
    served = sorted(set(subdomains))
    target = domain.dns_target
    if domain.dns_mode == DnsMode.WILDCARD:
        records = [DnsRecord(f"*.{domain.host}", target)]
    elif domain.dns_mode == DnsMode.SUBDOMAIN:
        records = [DnsRecord(f"{sub}.{domain.host}", target) for sub in served]
    elif domain.dns_mode == DnsMode.CUSTOM:
        records = [
            template_record(domain, index, sub)
            for index, template in enumerate(domain.dns_templates)
            for sub in (served if uses_subdomain(template.name) else [""])
        ]
    else:
        records = []
    return sorted(set(records))
