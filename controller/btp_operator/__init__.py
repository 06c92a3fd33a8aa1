"""The BtpOperator's live-state half: its deletion finalizer and status, and the sweep of module
objects an older chart version left behind (BTP Manager's reconciler, minus what is rendered).

    settings.py          BtpOperatorSettings: names, module-resources/, timeouts
    status.py            states, reasons, messages and the Ready condition (pure)
    module_resources.py  module-resources/ read: kinds, identities, chart version
    deprovisioning.py    hard delete, soft delete, module resource removal
    reconciler.py        BtpOperatorReconciler (finalizer, status, deprovisioning)
    outdated.py          OutdatedModuleResourcesReconciler (periodic sweep)
"""

from btp_gitops.controller.btp_operator.module_resources import ModuleResources, load_module_resources
from btp_gitops.controller.btp_operator.outdated import OutdatedModuleResourcesReconciler
from btp_gitops.controller.btp_operator.reconciler import BtpOperatorReconciler
from btp_gitops.controller.btp_operator.settings import FINALIZER, FORCE_DELETE_LABEL, BtpOperatorSettings

__all__ = [
    "FINALIZER",
    "FORCE_DELETE_LABEL",
    "BtpOperatorReconciler",
    "BtpOperatorSettings",
    "ModuleResources",
    "OutdatedModuleResourcesReconciler",
    "load_module_resources",
]
