"""Names, labels and identity hashes of everything a CAP application renders.

CAP Operator's names and `sme.sap.com/` label and annotation keys are kept, so its tools still read them.
Where the operator used generateName or live state, a name is derived from the source instead, so
the same input always gives the same names:

    Content Job                 `<cav>-<workload>`, or `<cav>-content` for a version with a single
                                Content job and no `contentJobs` (CAP Operator's legacy name)
    VCAP_SERVICES Secret        `<cav>-<workload>-vcap` (ExternalSecret of the same name)
    binding reader              `<ca>-binding-reader`: SecretStore, ServiceAccount, Role, RoleBinding
    binding volume              `binding-<service>` (mounted at /bindings/<service>)
    version NetworkPolicies     `<cav>` (within the version), `<cav>-<workload>` (Cluster ports)
    exposure VirtualService     `<ca>-<subDomain>`
    Gateway                     `<domain name>`, in the Domain's namespace (ClusterDomain: the
                                ingress namespace)
    Certificate                 `<namespace>--<domain name>`: the Domain's namespace, for a
                                ClusterDomain the namespace CAP Operator ran in
                                (`btp-gitops.io/cap-operator-namespace`, default
                                `cap-operator-system`); cert-manager's in the ingress namespace
                                (CAP Operator's name), Gardener's next to the Gateway
    TLS Secret (credentialName) the Certificate's name and the certificate manager's suffix, as
                                CAP Operator names it (`<namespace>--<domain>-gardener`,
                                `...-cert-manager`), in the ingress namespace: the Secret CAP
                                Operator's Certificate filled is the one the Gateway reads
    client CA Secret            `<credentialName>-cacert` (key `ca.crt`), where Istio looks for
                                the CA of a credentialName, in the ingress namespace
    domain ingress NetworkPolicy `<kind>--<domain name>--ingress` (kind lower case), in each
                                namespace of the applications on the domain
    DNSEntry                    `<domain name>-<first 10 hex of sha1(dnsName)>`
    app directories             `cap.<namespace>.<ca>`, `cap-domain.<namespace>.<domain>`,
                                `cap-clusterdomain.<name>` (namespaces hold no dots, so these
                                never meet)

`sme.sap.com/owner-generation` is left out: it is the live `metadata.generation`, which a render
cannot know and which would change the output without any change in Git. The one exception is a
version whose Deployments CAP Operator created (`btp-gitops.io/cap-operator-generation`, written
by `btp-gitops import`): CAP Operator selected their pods by its whole label set, generation
included, and a Deployment's selector cannot change, so `adopted_workload_labels` gives them that
set, with the generation written in the source, instead of `pod_selector`.
"""

from __future__ import annotations

import hashlib

from btp_gitops.generator.domains.cap.model import Application, Domain, Version, Workload

PREFIX = "sme.sap.com/"
OWNER_IDENTIFIER_HASH = f"{PREFIX}owner-identifier-hash"
OWNER_IDENTIFIER = f"{PREFIX}owner-identifier"
APP_IDENTIFIER_HASH = f"{PREFIX}app-identifier-hash"
APP_IDENTIFIER = f"{PREFIX}app-identifier"
OWNER_GENERATION = f"{PREFIX}owner-generation"
WORKLOAD_NAME = f"{PREFIX}workload-name"
WORKLOAD_TYPE = f"{PREFIX}workload-type"
CATEGORY = f"{PREFIX}category"
CAV_VERSION = f"{PREFIX}cav-version"
EXPOSED_WORKLOAD = f"{PREFIX}exposed-workload"
DNS_NAME_HASH = f"{PREFIX}dns-name-hash"
DOMAIN_HOST_HASH = f"{PREFIX}domain-host-hash"
DISABLE_KARYDIA = "x4.sap.com/disable-karydia"
APP_LABEL = "app"


class Category:
    WORKLOAD = "Workload"
    SERVICE = "Service"
    SERVICE_MONITOR = "ServiceMonitor"


def sha1_hex(*parts: str) -> str:
    """CAP Operator's identity hash: SHA-1 of the parts concatenated with no separator."""
    return hashlib.sha1("".join(parts).encode("utf-8"), usedforsecurity=False).hexdigest()


def owner_labels(namespace: str, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, annotations) naming the source object a rendered object belongs to."""
    identifier = f"{namespace}.{name}" if namespace else name
    return {OWNER_IDENTIFIER_HASH: sha1_hex(namespace, name)}, {OWNER_IDENTIFIER: identifier}


def app_identifier(app: Application) -> str:
    return f"{app.account}.{app.btp_app_name}"


def app_identifier_hash(app: Application) -> str:
    return sha1_hex(app.account, app.btp_app_name)


# --- per version ----------------------------------------------------------------------------------


def workload_object_name(version: Version, workload: Workload) -> str:
    return f"{version.name}-{workload.name.lower()}"


def service_name(version: Version, workload: Workload) -> str:
    return f"{version.name}-{workload.name}-svc"


def service_host(version: Version, workload: Workload) -> str:
    return f"{service_name(version, workload)}.{version.namespace}.svc.cluster.local"


def content_job_name(version: Version, workload: Workload) -> str:
    legacy = not version.content_jobs and len(version.content_jobs_in_order()) == 1
    return f"{version.name}-content" if legacy else f"{version.name}-{workload.name}"


def vcap_secret_name(version: Version, workload: Workload) -> str:
    return f"{version.name}-{workload.name}-vcap"


def binding_volume_name(service: str) -> str:
    """The volume a binding Secret is mounted from (service-bindings mode); DNS label safe."""
    name = f"binding-{service}"
    return name if len(name) <= 63 else f"binding-{sha1_hex(service)[:20]}"


def version_labels(app: Application, version: Version, category: str) -> dict[str, str]:
    """What every object of a version carries."""
    owner, _ = owner_labels(version.namespace, version.name)
    return {APP_LABEL: app.btp_app_name, CAV_VERSION: version.version, CATEGORY: category, **owner}


def version_annotations(version: Version) -> dict[str, str]:
    return owner_labels(version.namespace, version.name)[1]


def pod_selector(version: Version, workload: Workload) -> dict[str, str]:
    """Selects exactly the pods of one workload of one version (the owner hash keeps versions apart)."""
    owner, _ = owner_labels(version.namespace, version.name)
    return {**owner, WORKLOAD_NAME: workload_object_name(version, workload)}


def workload_labels(
    app: Application, version: Version, workload: Workload, category: str = Category.WORKLOAD
) -> dict[str, str]:
    """The workload's own labels under CAP Operator's keys (the operator's keys win)."""
    labels = {
        **workload.labels,
        **version_labels(app, version, category),
        WORKLOAD_NAME: workload_object_name(version, workload),
        WORKLOAD_TYPE: workload.type,
    }
    if workload.name in version.exposed_workloads():
        labels[EXPOSED_WORKLOAD] = "true"
    return labels


def adopted_workload_labels(app: Application, version: Version, workload: Workload) -> dict[str, str]:
    """A Deployment's labels, pod selector and pod labels where CAP Operator created it: CAP
    Operator's label set (the workload's labels, its own keys, `exposed-workload`), which
    `workload_labels` holds, and the generation it was created at; {} for a version without one."""
    generation = version.cap_operator_generation
    if not generation:
        return {}
    return {**workload_labels(app, version, workload), OWNER_GENERATION: generation}


def workload_annotations(version: Version, workload: Workload) -> dict[str, str]:
    return {**workload.annotations, **version_annotations(version)}


# --- per application and domain -------------------------------------------------------------------


def binding_reader_name(app: Application) -> str:
    return f"{app.name}-binding-reader"


def exposure_virtual_service_name(app: Application, sub_domain: str) -> str:
    return f"{app.name}-{sub_domain}"


def application_labels(app: Application) -> tuple[dict[str, str], dict[str, str]]:
    labels, annotations = owner_labels(app.namespace, app.name)
    labels[APP_IDENTIFIER_HASH] = app_identifier_hash(app)
    annotations[APP_IDENTIFIER] = app_identifier(app)
    return {APP_LABEL: app.btp_app_name, **labels}, annotations


def gateway_namespace(domain: Domain) -> str:
    return domain.ingress_namespace if domain.is_cluster_domain else domain.namespace


def gateway_name(domain: Domain) -> str:
    return domain.name


def gateway_reference(domain: Domain) -> str:
    """How a VirtualService names the domain's Gateway."""
    return f"{gateway_namespace(domain)}/{gateway_name(domain)}"


def certificate_name(domain: Domain) -> str:
    """`<namespace>--<name>`, CAP Operator's credential name without the certificate manager's
    suffix: the Domain's namespace, for a ClusterDomain the namespace CAP Operator ran in."""
    namespace = domain.cap_operator_namespace if domain.is_cluster_domain else domain.namespace
    return f"{namespace}--{domain.name}"


def credential_name(domain: Domain) -> str:
    """The TLS Secret the Certificate fills and the Gateway reads (`credentialName`)."""
    return f"{certificate_name(domain)}-{domain.certificate_manager}"


def client_ca_secret_name(domain: Domain) -> str:
    """Where Istio reads the client CA of a credentialName: that name plus `-cacert`."""
    return f"{credential_name(domain)}-cacert"


def domain_network_policy_name(domain: Domain) -> str:
    return f"{domain.kind.lower()}--{domain.name}--ingress"


def dns_entry_name(domain: Domain, dns_name: str) -> str:
    return f"{domain.name}-{sha1_hex(dns_name)[:10]}"


def domain_labels(domain: Domain) -> tuple[dict[str, str], dict[str, str]]:
    labels, annotations = owner_labels(domain.namespace, domain.name)
    labels[DOMAIN_HOST_HASH] = sha1_hex(domain.host)
    return labels, annotations


def application_app(app: Application) -> str:
    return f"cap.{app.namespace}.{app.name}"


def domain_app(domain: Domain) -> str:
    if domain.is_cluster_domain:
        return f"cap-clusterdomain.{domain.name}"
    return f"cap-domain.{domain.namespace}.{domain.name}"
