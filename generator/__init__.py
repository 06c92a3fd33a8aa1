"""btp-gitops generator: renders SAP BTP workloads into a GitOps repository.

The pipeline, stage by stage (see ARCHITECTURE.md):

    load sources -> validate against schemas/ -> resolve -> render -> transform -> serialize -> write

`core`, `transforms`, `charts`, `domains` and the feature packages are pure data code (an
import-linter contract). The filesystem, Git, the Helm engine and the cluster are reached through
`io`, called by `cli` and by the `pipeline` functions; a domain renders charts through the
`ChartRenderer` the pipeline hands it.
"""
