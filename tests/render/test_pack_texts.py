"""The render pack's texts (io.packed_app.PackBlob): reading a pack reads its header and index; the
texts stay in the file, open, until one is needed, and are then checked against the SHA-256 the
signed header names. The file opened is the one read, whatever is renamed over it meanwhile; a
file changed in place is found out, and nothing is left open either way.

Real packs written by real renders in a real cache directory; the descriptors counted are the
process's own (/proc/self/fd).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from btp_gitops.generator.io import render_pack
from btp_gitops.generator.io.packed_app import PackChanged
from btp_gitops.generator.io.render_cache import RenderCache
from tests.render.test_render_cache import tenant, write
from tests.render.test_render_pack import packs, render, reused, same_as_uncached, source
from tests.support.forged_cache import secret, split_pack, write_pack

__all__ = ["source"]  # the fixture, used by name

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def written_pack(source: Path, tmp_path: Path) -> tuple[Path, Path]:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    return directory, pack


def test_the_texts_are_read_when_first_needed_from_the_file_that_was_opened(
    source: Path, tmp_path: Path
) -> None:
    directory, pack = written_pack(source, tmp_path)
    before = open_descriptors()
    read = render_pack.read_pack(directory, pack.stem, secret())
    assert read is not None and open_descriptors() == before + 1  # the texts' file, kept open
    # Another file renamed over it (as a concurrent render writes its pack): the one opened is read.
    original = pack.read_bytes()
    replacement = pack.with_suffix(".new")
    replacement.write_bytes(b"\x00" * len(original))
    replacement.rename(pack)
    assert read.texts_hold() and open_descriptors() == before
    first = next(record.app for record in read.records.values() if record.app is not None)
    assert first.files  # decoded from the texts read


def test_texts_changed_in_place_do_not_hold_and_are_never_handed_out(source: Path, tmp_path: Path) -> None:
    directory, pack = written_pack(source, tmp_path)
    before = open_descriptors()
    read = render_pack.read_pack(directory, pack.stem, secret())
    assert read is not None
    data = bytearray(pack.read_bytes())
    data[-2] ^= 0x01  # in the last app's texts
    with pack.open("r+b") as file:  # in place: the same file as the one open
        file.write(bytes(data))
    assert not read.texts_hold() and open_descriptors() == before
    first = next(record.app for record in read.records.values() if record.app is not None)
    with pytest.raises(PackChanged, match=r"holds other texts than its header names"):
        first.content.files()


def test_texts_cut_short_do_not_hold(source: Path, tmp_path: Path) -> None:
    directory, pack = written_pack(source, tmp_path)
    read = render_pack.read_pack(directory, pack.stem, secret())
    assert read is not None
    os.truncate(pack, pack.stat().st_size - 10)
    assert not read.texts_hold()


@pytest.mark.parametrize("damage", ["header", "index", "length", "signed index at odds"])
def test_a_pack_refused_on_reading_leaves_nothing_open(source: Path, tmp_path: Path, damage: str) -> None:
    directory, pack = written_pack(source, tmp_path)
    if damage == "signed index at odds":  # refused after its texts' file was handed to them
        fields, index, blob = split_pack(pack)
        index["records"][0][6][0] = "Not_A_Name"
        write_pack(pack, fields, index, blob, sign=True)
    header, body = pack.read_bytes().split(b"\n", 1)
    if damage == "header":
        header = header.replace(b'"stamp"', b'"stamp_"')
    elif damage == "index":
        body = bytes([body[0] ^ 0x01]) + body[1:]
    elif damage == "length":
        body += b"more"
    pack.write_bytes(header + b"\n" + body)
    before = open_descriptors()
    assert render_pack.read_pack(directory, pack.stem, secret()) is None
    assert open_descriptors() == before


def test_a_render_closes_the_texts_it_did_not_need(source: Path, tmp_path: Path) -> None:
    """A render lays out every app (it reads the texts, and the file is closed then); nothing of
    the pack, base or delta, is left open after it, twice over."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    write(source, tenant(6, "bookshop-1-1-0"))  # one record more: a delta is written beside the base
    before = open_descriptors()
    for _ in range(2):  # the second reads the base and the delta the first wrote
        assert reused(render(source, RenderCache(directory)))
        assert open_descriptors() == before
    assert (directory / render_pack.DIRECTORY / f"{packs(directory)[0].stem}.delta").is_file()
