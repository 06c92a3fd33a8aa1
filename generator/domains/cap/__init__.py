"""CAP applications (CAP Operator's CAPApplication, CAPApplicationVersion, Domain, ClusterDomain)."""

from generator.domains.cap.render import render_cap_applications

__all__ = ["render_cap_applications"]
