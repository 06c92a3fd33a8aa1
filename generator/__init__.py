"""btp-gitops generator: renders SAP BTP workloads into a GitOps repository.

The pipeline, stage by stage (see ARCHITECTURE.md):

    load sources -> validate against schemas/ -> resolve -> render -> transform -> serialize -> write

Only its `io` and `cli` packages touch the filesystem, Git or the Helm engine; everything in
`core`, `transforms` and `domains` is pure data code.
"""
