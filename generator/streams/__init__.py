"""Manifest streams exchanged with other tools.

helm  the stream Helm hands a post-renderer, read and written back in the same shape
"""
