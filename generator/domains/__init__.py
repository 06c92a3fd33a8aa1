"""One module per domain, each reading like the operator behaviour it replaces."""
