"""btp-gitops generator: renders SAP BTP workloads into a GitOps repository.

The pipeline, stage by stage (see ARCHITECTURE.md):

    load sources -> validate against schemas/ -> resolve -> render -> transform -> serialize -> write

Only `generator.io` and `generator.cli` touch the filesystem, Git or the Helm engine; everything
in `generator.core`, `generator.transforms` and `generator.domains` is pure data code.
"""

__version__ = "0.1.0"
