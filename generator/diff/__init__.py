"""`btp-gitops diff`'s comparison: two rendered trees in, a masked report out. Pure (kernel only).

compare  match objects by app and identity, unified diffs of masked copies
masking  what a diff may show of Secret values, caBundles, PEM bodies and private keys
report   the text, markdown and JSON reports of a `ClusterDiff`
"""
