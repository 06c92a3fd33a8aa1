"""`btp-gitops subscription-server`: the SaaS registry / subscription manager callbacks of CAP applications.

server        HTTP surface: settings, routing table, aiohttp server and its limits, /healthz /readyz /metrics
handlers      per route: authenticate, find the application, write, answer (order of checks documented)
auth          XSUAA bearer tokens (jku, JWKS cache, signature, expiry, audience, scopes), client certificates
payloads      typed request bodies, 400 messages naming the field
ledger        the TenantLedger interface the handlers record through
git_ledger    TenantLedger on the source Git repository (controller.gitstore, controller.records)
metrics       Prometheus collectors on the server's own registry

Its clients (binding credentials, the SaaS registry callback, the cluster side) are in
controller.clients, which the CAP reconcilers share.
"""
