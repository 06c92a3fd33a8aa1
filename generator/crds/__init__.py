"""The CustomResourceDefinitions of our own kinds, generated from the JSON Schemas of schemas/.

generate  JSON Schema 2020-12 -> one structural apiextensions.k8s.io/v1 CRD per group and kind
"""
