"""Whole pipelines, each a readable list of named steps; the I/O is the calls to generator.io.

Most of it sits at the two ends (sources read, the tree written), but not all: the render cache
is read and written around a render (cached_sources, which also stats every source file), charts
render mid-pipeline through the `ChartRenderer` passed to the domains, and post-render spools its
input and output to temporary files.
"""
