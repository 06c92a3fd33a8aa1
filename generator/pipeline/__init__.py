"""Whole pipelines, each a readable list of named steps with I/O only at both ends."""
