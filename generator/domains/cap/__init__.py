"""CAP applications: CAP Operator's CAPApplication, CAPApplicationVersion, CAPTenant, Domain and
ClusterDomain."""

from btp_gitops.generator.domains.cap.render import render_cap_applications

__all__ = ["render_cap_applications"]
