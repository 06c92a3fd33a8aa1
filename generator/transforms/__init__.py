"""Pure filters over lists of manifests, shared by `render` (Git output) and `post-render` (Helm).

Each filter takes manifests and returns manifests; none reads or writes anything else.
"""
