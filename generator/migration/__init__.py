"""`btp-gitops import`: objects the three operators are driven by, read from a running cluster
or from `kubectl get -o yaml` dumps, turned into source files; and the cutover plan that says
what a render of those sources would do to the live objects. Pure (kernel only): the cluster and
the dumps are read by `io`, the files are written by the pipeline.

model         what every part shares: a live object with its origin, the imported files, the skips
kinds         the kinds import reads (group, version, plural, scope) and the objects it reads by name
cap           CAP Operator's objects (applications, versions, tenants with their status, domains) -> `cap/`
kyma          Lifecycle Manager's Kyma, ModuleTemplates, ModuleReleaseMetas -> `kyma/`
btp_operator  BTP Manager's BtpOperator and the settings of its Secret -> `btp-operator/`
cluster_managers  which certificate managers and DNS manager the cluster runs, from three CRDs read by name
live_meta     what the translators share: metadata kept or left out, fields checked as the schemas accept them
"""

from __future__ import annotations

from btp_gitops.generator.migration.btp_operator import import_btp_operator
from btp_gitops.generator.migration.kyma import import_kyma
from btp_gitops.generator.migration.model import (
    FollowUp,
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
    Skipped,
    merge_results,
)

__all__ = [
    "FollowUp",
    "ImportResult",
    "ImportedDocument",
    "ImportedFile",
    "LiveObject",
    "Skipped",
    "import_btp_operator",
    "import_kyma",
    "merge_results",
]
