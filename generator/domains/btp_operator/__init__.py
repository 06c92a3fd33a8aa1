"""The SAP BTP service operator module (BtpOperator + BtpOperatorConfig -> the `btp-operator` app).

model        the module's sources (ModuleConfig) and names
validation   which BtpOperator and BtpOperatorConfig a render acts on, what it refuses
render       the chart, transformed as BTP Manager installed it
post_render  the same transforms over a stream Helm rendered (`btp-gitops post-render`)

This face lists what other packages (pipeline, controller) may use.
"""

from btp_gitops.generator.domains.btp_operator.model import MODULE_NAMESPACE, RELEASE_NAME
from btp_gitops.generator.domains.btp_operator.post_render import (
    CertificateStep,
    StreamSettings,
    post_render_module_objects,
)
from btp_gitops.generator.domains.btp_operator.render import render_btp_operator

__all__ = [
    "MODULE_NAMESPACE",
    "RELEASE_NAME",
    "CertificateStep",
    "StreamSettings",
    "post_render_module_objects",
    "render_btp_operator",
]
