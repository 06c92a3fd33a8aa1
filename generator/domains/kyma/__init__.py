"""The parts of the Kyma modules domain (generator.domains.kyma.render is the entry point).

model        typed views of Kyma, ModuleTemplate and ModuleReleaseMeta source documents
catalog      the module catalog: templates and release metas, and its own consistency rules
resolution   a Kyma's module entry -> one template, by ModuleReleaseMeta or by channel
maintenance  maintenance window policies (Lifecycle Manager's JSON format)
selector     label selectors: a restricted module's spec.kymaSelector
record       the versions a previous render resolved, kept beside the apps
status       module and Kyma states, in the shape of the Kyma CR's status
content      a resolved module -> its objects and default CR, labelled and ordered
removal_guard  no removal beside an entry that cannot be resolved (a misspelt name), unless asked for
render       find the Kyma and its catalog, and render the modules a plan lists
planning     the plan of a Kyma (record, skip-reconciliation, resolve, decide), loaded when there is one

This face lists what other packages (pipeline, cli) may use. It is lazy (core.faces): the options
of `render` and `diff` need only the maintenance defaults to build their parser (`--help`, a
usage error), not the resolution and content of a render.
"""

from typing import TYPE_CHECKING

from btp_gitops.generator.core.faces import lazy_face

if TYPE_CHECKING:
    from btp_gitops.generator.domains.kyma.maintenance import DEFAULT_MIN_WINDOW, PolicyText
    from btp_gitops.generator.domains.kyma.model import CATALOG_KINDS, KYMA
    from btp_gitops.generator.domains.kyma.record import RECORD_FILE
    from btp_gitops.generator.domains.kyma.render import (
        KymaContext,
        KymaPlan,
        plan_kyma_modules,
        render_kyma_modules,
    )
    from btp_gitops.generator.domains.kyma.status import KymaReport, report_table

__all__ = [
    "CATALOG_KINDS",
    "DEFAULT_MIN_WINDOW",
    "KYMA",
    "RECORD_FILE",
    "KymaContext",
    "KymaPlan",
    "KymaReport",
    "PolicyText",
    "plan_kyma_modules",
    "render_kyma_modules",
    "report_table",
]

__getattr__ = lazy_face(
    __name__,
    {
        "maintenance": ("DEFAULT_MIN_WINDOW", "PolicyText"),
        "model": ("CATALOG_KINDS", "KYMA"),
        "record": ("RECORD_FILE",),
        "render": ("KymaContext", "KymaPlan", "plan_kyma_modules", "render_kyma_modules"),
        "status": ("KymaReport", "report_table"),
    },
)
