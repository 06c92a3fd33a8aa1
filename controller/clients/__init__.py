"""Clients of systems outside the controller, below `cap` and `subscription`, which both use them.

targets       the application as the clients see it (services, binding Secrets)
credentials   XSUAA / saas-registry / subscription-manager credentials from binding Secrets
saas_client   the SaaS registry's completion callback: client-credentials token, PUT of the status
cluster_side  a tenant's subscription context Secret and pending-callback ConfigMap
prometheus    instant queries for version cleanup
"""
