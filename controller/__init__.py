"""btp-gitops controller: the few reconcilers that need live cluster state.

Tenant subscription callbacks, deletion finalizers and version cleanup live here; everything that
is a pure function of the desired state is rendered by `generator` instead.
"""
