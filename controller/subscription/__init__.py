"""`btp-gitops subscription-server`: the SaaS registry / subscription manager callbacks of CAP applications.

server        HTTP surface: settings, routing table, aiohttp server and its limits, /healthz /readyz /metrics
handlers      per route: authenticate, find the application, write, answer (order of checks documented)
auth          XSUAA bearer tokens (jku, JWKS cache, signature, expiry, audience, scopes), client certificates
payloads      typed request bodies, 400 messages naming the field
credentials   XSUAA / saas-registry / subscription-manager credentials from binding Secrets
cluster_side  subscription context Secret and pending-callback ConfigMap of a tenant
ledger        the TenantLedger interface the handlers record through
git_ledger    TenantLedger on the source Git repository (controller.gitstore, controller.records)
saas_client   the completion callback: client-credentials token, PUT of the status
metrics       Prometheus collectors on the server's own registry
"""
