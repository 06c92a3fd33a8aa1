"""What `post-render` serves: its domains, its certificate modes, and the file its own objects are
filed under in a Helm 4 stream.

A module of their own so that the command line and both post-render pipelines share them without
importing each other: the BTP operator's post-render (pipeline.post_render, run by Helm on every
install) does not load the CAP and Kyma domains' pipeline (pipeline.post_render_sources, which
renders through the whole render pipeline) unless the stream is theirs.
"""

from __future__ import annotations

BTP_OPERATOR = "btp-operator"
CAP = "cap"
KYMA = "kyma"
SOURCE_DOMAINS = (CAP, KYMA)  # rendered from their sources in the stream, as `render` renders them
DOMAINS = (BTP_OPERATOR, *SOURCE_DOMAINS)
CERTIFICATE_MODES = ("cert-manager", "gardener", "self-signed")
GENERATED_FILENAME = "btp-gitops/templates/post-render.yaml"
