"""The Argo CD / Flux objects that make a GitOps engine sync a rendered cluster directory.

objects  the ApplicationSet, or the Flux GitRepository and Kustomizations, under `.wiring/`
"""
