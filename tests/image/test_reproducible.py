"""Two builds of the image from the same inputs are the same bytes (the same manifest digest).

The second build runs with `--no-cache`: Debian packages downloaded and unpacked again, pip run
again, byte-code compiled again, layer packed and compressed again. It is compared with the
cached build the other image tests use (which may come from an earlier session with the same
inputs: the cache key covers them all). A full build, about 3 minutes on 2 cores: marked slow.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.image.conftest import TEST_TIMEOUT, BuiltImage, build_image

pytestmark = [pytest.mark.image, pytest.mark.tools, pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT)]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def test_a_build_without_cache_is_byte_identical(image: BuiltImage, tmp_path: Path) -> None:
    fresh = build_image(tmp_path, cache=False)
    assert fresh.digest == image.digest
    assert fresh.config() == image.config()
    # The OCI archive too: the layout in a tarball with fixed order, owners and mtimes.
    assert sha256(fresh.archive) == sha256(image.archive)
    assert (tmp_path / "packages.txt").read_text() == (image.layout.parent / "packages.txt").read_text()
