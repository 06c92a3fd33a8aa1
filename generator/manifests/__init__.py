"""Offline validation of rendered Kubernetes manifests (`btp-gitops validate`). Pure (kernel only):
the schema files are read by generator.io.kube_schemas.

validation   built-in kinds against Kubernetes' OpenAPI schemas, custom resources against their CRD
crd_schemas  a CRD version's structural schema -> JSON Schema, the shipped third-party CRDs
"""
