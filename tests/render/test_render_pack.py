"""The render pack (io.render_pack, pipeline.cached_sources): unchanged tenant records and their
finished apps taken from one file, with the same bytes as a render without any cache.

Every render here is the real pipeline in process (or the CLI); the pack is a real file in a real
cache directory. The source files' times are set an hour back where a test needs them not to be
racy (a file modified within RACY_NS of the render that wrote the pack is read again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.errors import InvalidSpec
from btp_gitops.generator.io import render_pack
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.io.render_pack import Pack, PackedRecord
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from btp_gitops.generator.pipeline.render import RenderResult, render_cluster
from btp_gitops.generator.transforms.metadata import drop_empty_metadata_maps
from btp_gitops.generator.transforms.ordering import flux_stages
from btp_gitops.generator.wiring.objects import DEFAULT_TARGET, FLUX, TargetOptions
from tests.conftest import CLI, EXAMPLES
from tests.render.test_render_cache import ENGINE, SCHEMAS, outcome, records, tenant, write
from tests.support.forged_cache import (
    seal_pack,
    secret,
    split_pack,
    write_pack,
)

FLUX_TARGET = TargetOptions(target=FLUX)
HOUR_AGO = time.time_ns() - 3600 * 10**9


def age(source: Path) -> None:
    """Every source file last modified an hour ago: not racy for a pack written now."""
    for path in source.rglob("*.yaml"):
        os.utime(path, ns=(HOUR_AGO, HOUR_AGO))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    target = tmp_path / "source"
    shutil.copytree(EXAMPLES / "cap-app", target)
    for index in range(6):
        write(target, tenant(index, ("bookshop-1-1-0", "bookshop-1-0-0", None)[index % 3]))
    age(target)
    return target


def render(
    source: Path, cache: RenderCache | None, target: TargetOptions = DEFAULT_TARGET, *, flat: bool = False
) -> RenderResult:
    return render_cluster(
        (source,), "demo", ENGINE, SCHEMAS, target=target, cache=cache, shard_tenants=not flat
    )


def same_as_uncached(
    source: Path, directory: Path, target: TargetOptions = DEFAULT_TARGET, *, flat: bool = False
) -> tuple[RenderCache, RenderResult]:
    cache = RenderCache(directory)
    cached = render(source, cache, target, flat=flat)
    uncached = render(source, None, target, flat=flat)
    assert outcome(cached) == outcome(uncached)
    assert [app.app for app in cached.apps] == [app.app for app in uncached.apps]
    return cache, cached


def packs(directory: Path) -> list[Path]:
    return sorted((directory / render_pack.DIRECTORY).glob("*.pack"))


def reused(result: RenderResult) -> list[ReusedApp]:
    return [app for app in result.apps if isinstance(app, ReusedApp)]


@pytest.mark.parametrize("target", [DEFAULT_TARGET, FLUX_TARGET], ids=["argocd", "flux"])
@pytest.mark.parametrize("flat", [False, True], ids=["sharded", "flat"])
def test_unchanged_records_and_their_apps_come_from_the_pack(
    source: Path, tmp_path: Path, target: TargetOptions, flat: bool
) -> None:
    directory = tmp_path / "cache"
    cold, first = same_as_uncached(source, directory, target, flat=flat)
    assert (cold.hits, cold.packs_written, reused(first)) == (0, 1, [])
    (pack,) = packs(directory)
    written = pack.stat().st_mtime_ns

    warm, second = same_as_uncached(source, directory, target, flat=flat)
    tenants = records(source)
    assert (warm.hits, warm.written, warm.packs_written) == (tenants, 0, 0)  # nothing changed: not written
    assert pack.stat().st_mtime_ns == written
    apps = reused(second)
    # Every app of a record (a provider without a record has an app rendered each time).
    assert {app.app for app in apps} == {
        app.app for app in first.apps if app.manifests and "/tenants/" in app.manifests[0].origin
    }
    # The objects, read back from the files when asked for, are the ones a render without the
    # cache writes (for Flux, without the sync-wave annotation its layout removes).
    uncached = {app.app: app for app in render(source, None, target, flat=flat).apps}
    for app in apps:
        written = uncached[app.app].manifests
        if target.target == FLUX:
            written = [manifest for manifest, _ in flux_stages(written)]
            drop_empty_metadata_maps(written)
        assert app.object_count == len(written)
        assert [(m.body, m.origin) for m in app.manifests] == [(m.body, m.origin) for m in written]
        assert app.group == uncached[app.app].group


def test_a_new_tenant_is_rendered_and_the_others_reused(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    write(source, tenant(50))
    added, result = same_as_uncached(source, directory)
    # The new record's app goes into the pack (a delta), not into an entry of its own.
    assert (added.hits, added.written, added.packs_written) == (records(source) - 1, 0, 1)
    assert "cap-tenant.bookshop.customer-050" not in {app.app for app in reused(result)}
    age(source)
    again, result = same_as_uncached(source, directory)
    assert (again.hits, again.written, again.packs_written) == (records(source), 0, 1)  # no longer racy
    assert "cap-tenant.bookshop.customer-050" in {app.app for app in reused(result)}


def test_a_removed_tenant_leaves_the_pack(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (source / "tenants" / "customer-004.yaml").unlink()
    removed, result = same_as_uncached(source, directory)
    assert (removed.hits, removed.written, removed.packs_written) == (records(source), 0, 1)
    assert "cap-tenant.bookshop.customer-004" not in {app.app for app in result.apps}
    (pack,) = packs(directory)
    read = render_pack.read_pack(directory, pack.stem, secret())
    assert read is not None
    assert not [shown for shown in read.records if "customer-004" in shown]  # the delta says so
    assert [shown for shown in read.base if "customer-004" in shown]


def _same_size_change(path: Path) -> None:
    """Another tenant id of the same length, the file's mtime put back as it was."""
    status = path.stat()
    text = path.read_text()
    changed = text.replace("00000004-", "00000009-", 1)
    assert changed != text and len(changed) == len(text)
    path.write_text(changed)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (status.st_size, status.st_mtime_ns)


def test_a_record_changed_in_place_with_its_size_and_mtime_is_read_again(
    source: Path, tmp_path: Path
) -> None:
    """Not racy: size and mtime say nothing changed, the ctime (and, on some file systems, the
    inode) does."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    _same_size_change(source / "tenants" / "customer-004.yaml")
    changed, result = same_as_uncached(source, directory)
    assert (changed.hits, changed.written, changed.packs_written) == (records(source) - 1, 0, 1)
    assert "00000009-5d2b" in "".join(result.files.values())


def test_a_record_racing_the_pack_is_read_again(source: Path, tmp_path: Path) -> None:
    """Written just before the render that wrote the pack (racy), then changed with the same size
    and mtime: the render reads it (and finds other bytes) instead of trusting its identity."""
    directory = tmp_path / "cache"
    path = write(source, tenant(4, "bookshop-1-0-0"))  # modified now: racy for the pack below
    same_as_uncached(source, directory)
    _same_size_change(path)
    changed, result = same_as_uncached(source, directory)
    assert (changed.hits, changed.written, changed.packs_written) == (records(source) - 1, 0, 1)
    assert "00000009-5d2b" in "".join(result.files.values())


def test_racy_means_modified_within_racy_ns_of_the_stamp() -> None:
    """The rule itself, with the ctime and inode the same (as a file system with a coarse clock
    and an editor writing in place could leave them)."""
    stamp = HOUR_AGO + 3600 * 10**9
    record = PackedRecord("t.yaml", 1, (10, stamp - 1, 7, stamp - 1), "k", {}, "", None, stamp)
    assert not Pack.unchanged(record, record.identity)  # racy: read and compared
    old = (10, stamp - render_pack.RACY_NS - 1, 7, stamp - render_pack.RACY_NS - 1)
    assert Pack.unchanged(PackedRecord("t.yaml", 1, old, "k", {}, "", None, stamp), old)
    assert not Pack.unchanged(PackedRecord("t.yaml", 1, old, "k", {}, "", None, stamp), (11, *old[1:]))


def test_a_touched_record_with_the_same_bytes_is_taken_from_the_pack(source: Path, tmp_path: Path) -> None:
    """As after a fresh checkout: every identity differs, the bytes (the key) are the same."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    for path in (source / "tenants").glob("*.yaml"):
        path.write_bytes(path.read_bytes())
    age(source)
    touched, result = same_as_uncached(source, directory)
    assert (touched.hits, touched.written, touched.packs_written) == (records(source), 0, 1)
    assert len(reused(result)) == records(source)


def _fresh_checkout(source: Path) -> None:
    """Every record file as a clone writes it: the same bytes, a new inode, mtime and ctime."""
    for path in (source / "tenants").glob("*.yaml"):
        data = path.read_bytes()
        path.unlink()
        path.write_bytes(data)
    age(source)


def test_a_fresh_checkout_leaves_the_pack_as_it_was(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More new identities than a delta holds, and no other change: nothing is written (CI clones
    the sources for every run, and would rewrite the whole pack each time); the records are found
    by their bytes, this time and the next."""
    monkeypatch.setattr(render_pack, "DELTA_MIN", 2)  # six records: more than a delta holds
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    before = pack.read_bytes()
    for _ in range(2):
        _fresh_checkout(source)
        checked_out, result = same_as_uncached(source, directory)
        assert (checked_out.hits, checked_out.written, checked_out.packs_written) == (records(source), 0, 0)
        assert len(reused(result)) == records(source)
        assert pack.read_bytes() == before
        assert not list((directory / render_pack.DIRECTORY).glob("*.delta"))


def test_a_fresh_checkout_with_a_new_record_writes_a_delta_of_the_new_record(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render_pack, "DELTA_MIN", 2)
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    before = pack.read_bytes()
    _fresh_checkout(source)
    write(source, tenant(50))
    added, result = same_as_uncached(source, directory)
    assert (added.hits, added.written, added.packs_written) == (records(source) - 1, 0, 1)
    assert pack.read_bytes() == before  # the base, as it was
    read = render_pack.read_pack(directory, pack.stem, secret())
    assert read is not None
    assert [Path(shown).name for shown in read.records if shown not in read.base] == ["customer-050.yaml"]
    assert all(read.records[shown] is record for shown, record in read.base.items())
    # A pack that keeps the old identities still serves every record, by its bytes.
    age(source)
    again, result = same_as_uncached(source, directory)
    assert again.hits == records(source)
    assert len(reused(result)) == records(source)


def _checkout_at(source: Path, where: Path) -> Path:
    """The sources checked out under another directory (a CI job's own builds directory), the
    render run from there on `sources` (a relative path, as a pipeline names it)."""
    shutil.copytree(source, where / "sources")
    age(where / "sources")
    return where


def test_a_checkout_under_another_path_finds_the_pack_another_job_left(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitLab's concurrent builds directories, Jenkins' `@2` workspaces: the same repository
    checked out under another path for each job. The pack the first job wrote is found through
    the pointer (every record from it, by its bytes); with only new identities it is left as it
    is; a change makes the second directory a base of its own, which the pointer names next."""
    directory = tmp_path / "cache"
    first, second = (
        _checkout_at(source, tmp_path / "builds" / "0"),
        _checkout_at(source, tmp_path / "builds" / "1"),
    )
    monkeypatch.chdir(first)
    same_as_uncached(Path("sources"), directory)
    (pack,) = packs(directory)
    before = pack.read_bytes()

    monkeypatch.chdir(second)
    found, result = same_as_uncached(Path("sources"), directory)
    assert (found.hits, found.packs_written) == (records(second / "sources"), 0)
    assert len(reused(result)) == records(second / "sources")
    assert packs(directory) == [pack] and pack.read_bytes() == before

    write(second / "sources", tenant(50))
    added, result = same_as_uncached(Path("sources"), directory)
    assert (added.hits, added.packs_written) == (records(second / "sources") - 1, 1)
    assert pack.read_bytes() == before  # the first job's pack: no delta of another directory's
    (own,) = [path for path in packs(directory) if path != pack]
    monkeypatch.chdir(tmp_path / "builds")
    third = _checkout_at(second / "sources", tmp_path / "builds" / "2")
    monkeypatch.chdir(third)
    latest, result = same_as_uncached(Path("sources"), directory)  # the pointer names the newest
    assert (latest.hits, latest.packs_written) == (records(third / "sources"), 0)
    assert sorted(packs(directory)) == sorted([pack, own])


def test_another_tree_with_the_same_relative_sources_keeps_a_pack_of_its_own(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two repositories on one workstation, each rendering `sources`: the second finds the first's
    pack through the pointer, takes nothing from it (other records) and writes its own; each then
    renders from its own pack, and neither rewrites the other's."""
    directory = tmp_path / "cache"
    one = _checkout_at(source, tmp_path / "one")
    other = _checkout_at(source, tmp_path / "other")
    for path in (other / "sources" / "tenants").glob("customer-*.yaml"):
        path.unlink()
    for index in range(60, 66):
        write(other / "sources", tenant(index))
    age(other / "sources")
    monkeypatch.chdir(one)
    same_as_uncached(Path("sources"), directory)
    (first,) = packs(directory)
    monkeypatch.chdir(other)
    cache, _ = same_as_uncached(Path("sources"), directory)
    assert cache.packs_written == 1
    (second,) = [path for path in packs(directory) if path != first]
    kept = {path: path.read_bytes() for path in (first, second)}
    for where in (one, other, one):
        monkeypatch.chdir(where)
        again, _ = same_as_uncached(Path("sources"), directory)
        assert (again.hits, again.packs_written) == (records(where / "sources"), 0)
    assert {path: path.read_bytes() for path in (first, second)} == kept


def _pointers(directory: Path) -> list[Path]:
    return sorted((directory / render_pack.DIRECTORY).glob("*.latest"))


@pytest.mark.parametrize(
    "planted",
    [
        b"not a pack name\n",
        b"../" + b"a" * 61 + b"\n",
        b"f" * 64 + b"\n",  # names no pack
        b"0" * 5000,  # too long to be read
        "link",
    ],
)
def test_a_damaged_pointer_is_ignored(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planted: bytes | str
) -> None:
    directory = tmp_path / "cache"
    first, second = _checkout_at(source, tmp_path / "a"), _checkout_at(source, tmp_path / "b")
    monkeypatch.chdir(first)
    same_as_uncached(Path("sources"), directory)
    (pointer,) = _pointers(directory)
    (pack,) = packs(directory)
    pointer.unlink()
    if planted == "link":  # to the pack's name, written elsewhere: not followed
        (tmp_path / "elsewhere").write_text(pack.stem + "\n")
        pointer.symlink_to(tmp_path / "elsewhere")
    else:
        assert isinstance(planted, bytes)
        pointer.write_bytes(planted)
    monkeypatch.chdir(second)
    cold, _ = same_as_uncached(Path("sources"), directory)  # rendered as without a pack
    assert (cold.hits, cold.packs_written) == (0, 1)
    assert len(packs(directory)) == 2


def test_an_application_input_changed_renders_the_apps_again(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    domains = source / "domains.yaml"
    text = domains.read_text()
    assert "domain: bookshop.apps.example.com" in text
    domains.write_text(text.replace("domain: bookshop.apps.example.com", "domain: bookshop.apps.example.net"))
    changed, result = same_as_uncached(source, directory)
    assert (changed.hits, changed.packs_written, reused(result)) == (records(source), 1, [])
    age(source)
    again, result = same_as_uncached(source, directory)
    assert again.packs_written == 1 and reused(result)


def _repacked(pack: Path, change: Any) -> None:
    """A pack whose index `change` rewrote, signed with the user's key: damage only a forger
    holding the key makes."""
    fields, index, blob = split_pack(pack)
    index["records"] = change(index["records"])
    write_pack(pack, fields, index, blob, sign=True)


def _truncate(pack: Path, _: Path) -> None:
    pack.write_bytes(pack.read_bytes()[:-100])


def _flip(pack: Path, _: Path) -> None:
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0x01
    pack.write_bytes(bytes(data))


def _flip_at(pack: Path, where: Any) -> None:
    """One bit flipped at `where(fields, index)`, an offset into the body after the header line."""
    header, body = pack.read_bytes().split(b"\n", 1)
    fields = json.loads(header)
    offset = where(fields, json.loads(body[: fields["index"]]))
    data = bytearray(body)
    data[offset] ^= 0x01
    pack.write_bytes(header + b"\n" + bytes(data))


def _flip_index(pack: Path, _: Path) -> None:
    _flip_at(pack, lambda fields, index: fields["index"] // 2)


def _flip_text(pack: Path, _: Path) -> None:
    """In the first file text of the first record's app (a span every warm render uses)."""
    _flip_at(pack, lambda fields, index: fields["index"] + index["records"][0][6][4][2])


def _garbage(pack: Path, _: Path) -> None:
    pack.write_bytes(b"\x00\xff not a pack")


def _symlink(pack: Path, directory: Path) -> None:
    outside = directory.parent / "outside.pack"
    outside.write_bytes(pack.read_bytes())  # the right bytes, reached through a link
    pack.unlink()
    pack.symlink_to(outside)


def _directory(pack: Path, _: Path) -> None:
    pack.unlink()
    pack.mkdir()


def _foreign(pack: Path, directory: Path) -> None:
    """Another pack (the Flux target's), whole, but not this name's."""
    RenderCache(directory).close()
    render(pack.parents[2] / "source", RenderCache(directory), FLUX_TARGET)
    other = next(p for p in packs(directory) if p != pack)
    pack.write_bytes(other.read_bytes())


def _shape(pack: Path, _: Path) -> None:
    def change(records: list[Any]) -> list[Any]:
        records[0][4] = ["not", "a", "body"]
        return records

    _repacked(pack, change)


SWAPPED: list[str] = []


def _other_file(pack: Path, _: Path) -> None:
    """Two records under each other's file names: checksums fine, but each file's key is another."""

    def change(records: list[Any]) -> list[Any]:
        records[0][0], records[1][0] = records[1][0], records[0][0]
        SWAPPED[:] = [Path(records[0][0]).stem, Path(records[1][0]).stem]
        return records

    _repacked(pack, change)


def _number(literal: bytes) -> Any:
    """A damage: the first record's body given a number written as `literal` (JSON that Python's
    reader takes as NaN or an infinity), signed: no pack btp-gitops writes holds one."""

    def damage(pack: Path, _: Path) -> None:
        fields, index, blob = split_pack(pack)
        index["records"][0][4]["spec"]["replicas"] = "@number@"
        encoded = json.dumps(index).encode().replace(b'"@number@"', literal)
        body = encoded + blob
        fields = {**fields, "index": len(encoded), "length": len(body)}
        seal_pack(fields, body, sign=True)
        pack.write_bytes(json.dumps(fields).encode() + b"\n" + body)

    return damage


@pytest.mark.parametrize(
    "damage",
    [
        _number(b"NaN"),
        _number(b"-Infinity"),
        _number(b"1e400"),
        _truncate,
        _flip,
        _flip_index,
        _flip_text,
        _garbage,
        _symlink,
        _directory,
        _foreign,
        _shape,
        _other_file,
    ],
)
def test_a_damaged_pack_is_ignored(source: Path, tmp_path: Path, damage: Any) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    damage(pack, directory)
    after, result = same_as_uncached(source, directory)
    if damage is _other_file:
        # Both files are read (their identities are not the ones recorded for their names):
        # their bytes' keys differ from those records', so they are parsed and rendered again.
        assert after.hits == records(source) - 2
        assert len(SWAPPED) == 2
        assert set(SWAPPED).isdisjoint(a.app.rsplit(".", 1)[1] for a in reused(result))
    else:
        # The pack held every record (a render that writes one writes no entries): each is
        # parsed and rendered again, as without a cache. A directory in the pack's place is not
        # written over: that render keeps its records in entries instead.
        written = records(source) if damage is _directory else 0
        assert (after.hits, after.written, reused(result)) == (0, written, [])
    if damage is not _directory:  # a directory in its place is not written over
        assert after.packs_written == 1


def _lie(change: Any) -> Any:
    """A damage: the first record's app entry rewritten by `change(app, blob length)`, signed."""

    def damage(pack: Path, _: Path) -> None:
        fields, index, blob = split_pack(pack)
        change(index["records"][0][6], len(blob))
        write_pack(pack, fields, index, blob, sign=True)

    return damage


def _names_without_texts(app: list[Any], _: int) -> None:
    app[4][:2] = ["", ""]  # no names, no ids, and the span of four texts


def _empty_name(app: list[Any], _: int) -> None:
    app[4][0] += "\0"  # a fifth name, empty, with an id of its own
    app[4][1] += "0" * 40


def _span_reversed(app: list[Any], _: int) -> None:
    app[4][2], app[4][3] = app[4][3], app[4][2]


# Each way the index of a pack (format 5) could lie about an app that is found on reading: the
# pack is ignored, as one whose MAC does not hold (these are signed with the key).
INDEX_LIES = {
    "more-names-than-ids": lambda app, _: app[4].__setitem__(0, app[4][0] + "\0extra.yaml"),
    "fewer-ids-than-names": lambda app, _: app[4].__setitem__(1, app[4][1][:-40]),
    "an-id-one-character-short": lambda app, _: app[4].__setitem__(1, app[4][1][:-1]),
    "an-id-not-hexadecimal": lambda app, _: app[4].__setitem__(1, "X" + app[4][1][1:]),
    "an-id-in-capitals": lambda app, _: app[4].__setitem__(1, app[4][1].upper()),
    "an-empty-name": _empty_name,
    "names-without-texts": _names_without_texts,
    "span-beyond-the-blob": lambda app, size: app[4].__setitem__(3, size + 1),
    "span-before-the-blob": lambda app, _: app[4].__setitem__(2, -1),
    "span-reversed": _span_reversed,
    "span-not-a-number": lambda app, _: app[4].__setitem__(2, str(app[4][2])),
    "files-of-three-parts": lambda app, _: app.__setitem__(4, app[4][:3]),
    "files-per-file-as-format-4": lambda app, _: app.__setitem__(
        4, [[app[4][0], app[4][2], app[4][3], "0" * 40]]
    ),
    "names-not-a-string": lambda app, _: app[4].__setitem__(0, app[4][0].split("\0")),
    "keys-as-a-list": lambda app, _: app.__setitem__(3, app[3].split("\0")),
    "app-name-no-subdomain": lambda app, _: app.__setitem__(0, "Not_A_Name"),
    "group-no-subdomain": lambda app, _: app.__setitem__(1, "-shop-"),
}


@pytest.mark.parametrize("lie", INDEX_LIES.values(), ids=INDEX_LIES.keys())
def test_a_pack_whose_index_lies_about_an_app_is_ignored(source: Path, tmp_path: Path, lie: Any) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    _lie(lie)(pack, directory)
    after, result = same_as_uncached(source, directory)
    assert (after.hits, after.written, reused(result), after.packs_written) == (0, 0, [], 1)


def test_a_pack_rewritten_as_it_was_is_used(source: Path, tmp_path: Path) -> None:
    """The rewriting the lies above go through, with no lie: the pack is taken whole (so each lie
    alone is what has its pack ignored)."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    _lie(lambda app, _: None)(pack, directory)
    after, result = same_as_uncached(source, directory)
    assert (after.hits, after.packs_written) == (records(source), 0) and reused(result)


def test_a_pack_too_large_is_not_read(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    monkeypatch.setattr(render_pack, "MAX_PACK_BYTES", packs(directory)[0].stat().st_size - 1)
    after, result = same_as_uncached(source, directory)
    assert reused(result) == [] and after.packs_written == 0  # nor written


def test_only_the_latest_packs_are_kept(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "cache"
    monkeypatch.setattr(render_pack, "KEEP_PACKS", 2)
    same_as_uncached(source, directory)
    first = packs(directory)
    (pointer,) = _pointers(directory)
    for written in (first[0], pointer):
        os.utime(written, ns=(HOUR_AGO, HOUR_AGO))
    other = tmp_path / "other"
    shutil.copytree(source, other)
    same_as_uncached(other, directory)
    same_as_uncached(source, directory, FLUX_TARGET)
    left = packs(directory)
    assert len(left) == 2 and first[0] not in left
    assert len(_pointers(directory)) == 2 and pointer not in _pointers(directory)  # as many pointers


def test_concurrent_renders_write_whole_packs(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    command = [str(CLI), "render", str(source), "--stdout", "--cache-dir", str(directory)]
    expected = subprocess.run([*command[:-2], "--no-cache"], capture_output=True, check=True).stdout
    for _ in range(2):  # cold, then each reading what another may be writing
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
        outputs = [run.communicate(timeout=300) for run in runs]
        assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
        assert all(out == expected for out, _ in outputs)
    (pack,) = packs(directory)
    assert not list(pack.parent.glob(".tmp-*"))
    assert render_pack.read_pack(directory, pack.stem, secret()) is not None


def test_a_rendered_tree_through_the_cli_is_the_same_with_the_pack(source: Path, tmp_path: Path) -> None:
    """`render --out` with a warm pack, a tenant added: the same repository as with --no-cache,
    and the same JSON report (objects counted without decoding the reused apps)."""
    directory = tmp_path / "cache"
    warm_repo, cold_repo = tmp_path / "warm", tmp_path / "cold"
    render_args = ["render", str(source), "--cluster", "demo", "--output", "json"]
    subprocess.run(
        [str(CLI), *render_args, "--out", str(warm_repo), "--cache-dir", str(directory)], check=True
    )
    shutil.copytree(warm_repo, cold_repo)
    write(source, tenant(60))
    reports = [
        subprocess.run(
            [str(CLI), *render_args, "--out", str(repo), *flag], capture_output=True, check=True
        ).stdout
        for repo, flag in ((warm_repo, ["--cache-dir", str(directory)]), (cold_repo, ["--no-cache"]))
    ]
    assert reports[0] == reports[1]
    assert yaml.safe_load(reports[0])["changes"]["added"]
    files = [
        {p.relative_to(r): p.read_bytes() for p in r.rglob("*") if p.is_file()}
        for r in (warm_repo, cold_repo)
    ]
    assert files[0] == files[1]


def test_verbose_says_what_the_render_took_from_the_cache(source: Path, tmp_path: Path) -> None:
    """`-v` on `render --out`, `render --stdout` and `diff`: how many tenant records came from the
    cache, from which pack, and what became of it; a CI job or the Argo CD plugin can be checked
    to find its cache. Nothing of it without -v."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    builds = _checkout_at(source, tmp_path / "builds" / "0")
    other = _checkout_at(source, tmp_path / "builds" / "1")
    tenants = records(source)

    def cli(where: Path, *args: str) -> str:
        done = subprocess.run(
            [str(CLI), *args, "--cluster", "demo", "--cache-dir", str(directory)],
            capture_output=True,
            text=True,
            check=True,
            cwd=where,
        )
        return done.stderr

    def said(stderr: str) -> list[str]:
        return [line for line in stderr.splitlines() if line.startswith("render cache:")]

    assert said(cli(builds, "render", "sources", "--out", str(repo), "-v")) == [
        f"render cache: 0 of {tenants} tenant record(s) reused, from no pack; pack written"
    ]
    assert said(cli(builds, "render", "sources", "--out", str(repo), "-v")) == [
        f"render cache: {tenants} of {tenants} tenant record(s) reused, from the pack of this source tree; "
        "pack left as it was"
    ]
    assert said(cli(builds, "render", "sources", "--out", str(repo))) == []
    assert said(cli(other, "render", "sources", "--stdout", "-v")) == [
        f"render cache: {tenants} of {tenants} tenant record(s) reused, from the pack another directory "
        "wrote last (found through the pointer); pack left as it was"
    ]
    write(builds / "sources", tenant(60))
    age(builds / "sources")
    assert said(cli(builds, "diff", "sources", "--against", str(repo), "-v")) == [
        f"render cache: {tenants} of {tenants + 1} tenant record(s) reused, from the pack of this source "
        "tree; pack written"
    ]
    # No key to sign with (its directory cannot be made, no BTP_GITOPS_CACHE_KEY): said, not hidden.
    (tmp_path / "a-file").write_text("")
    keyless = {key: value for key, value in os.environ.items() if key != "BTP_GITOPS_CACHE_KEY"}
    done = subprocess.run(
        [str(CLI), "render", "sources", "--stdout", "--cluster", "demo", "--cache-dir", str(directory), "-v"],
        capture_output=True,
        text=True,
        check=True,
        cwd=builds,
        env={**keyless, "XDG_STATE_HOME": str(tmp_path / "a-file" / "state")},
    )
    assert said(done.stderr) == ["render cache: not used (no cache key could be read or made)"]


def refused_alike(source: Path, cache: RenderCache) -> str:
    """The render refuses the sources with the cache as without it, in the same words: those."""
    with pytest.raises(InvalidSpec) as uncached:
        render(source, None)
    with pytest.raises(InvalidSpec) as cached:
        render(source, cache)
    assert cached.value.lines() == uncached.value.lines()
    return "\n".join(cached.value.lines())


def _record_file(source: Path, file_name: str, record: dict[str, Any]) -> None:
    (source / "tenants" / file_name).write_text(yaml.safe_dump(record, sort_keys=False))


@pytest.mark.parametrize("file_name", ["aaa.yaml", "zzz.yaml"], ids=["new-first", "new-last"])
def test_rules_across_records_hold_for_records_taken_from_the_pack(
    source: Path, tmp_path: Path, file_name: str
) -> None:
    """Records taken from the pack are not planned again, but every rule across records holds for
    them: a new record (read before them, or after) taking a packed record's name, tenant id and
    subdomain fails the render with the very problems a render without the cache reports."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    clash = tenant(2, tenantId="00000003-5d2b-4c8e-9a3f-1b6d2c4e8f00", subDomain="customer-004")
    _record_file(source, file_name, clash)
    cache = RenderCache(directory)
    messages = refused_alike(source, cache)
    assert cache.hits == records(source) - 1  # every record but the new one from the pack
    assert "customer-002 is recorded twice" in messages
    assert "tenant 00000003-5d2b-4c8e-9a3f-1b6d2c4e8f00 is also CAPTenant bookshop/" in messages
    assert "customer-004.bookshop.apps.example.com is also served by CAPTenant bookshop/" in messages


def test_a_packed_record_that_becomes_the_provider_is_planned_as_the_provider(
    source: Path, tmp_path: Path
) -> None:
    """The provider's tenant id moves to a packed record: the CAPApplication is an application
    input, so no packed app is known any more and every record is planned again; that record is
    the provider now, and must be named as the provider."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    application = source / "capapplication.yaml"
    text = application.read_text()
    assert "tenantId: 6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0" in text
    application.write_text(
        text.replace("6f5e4d3c-2b1a-4098-b7c6-d5e4f3a2b1c0", "00000001-5d2b-4c8e-9a3f-1b6d2c4e8f00")
    )
    messages = refused_alike(source, RenderCache(directory))
    assert "the provider tenant's record must be named bookshop-provider" in messages


def test_a_changed_deprovision_mark_on_a_packed_record_is_checked(source: Path, tmp_path: Path) -> None:
    """A record's own rules are not checked again while its bytes are the packed ones; changed,
    it is read, and an invalid mark fails the render as without the cache."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    record = tenant(3)
    record["metadata"]["annotations"] = {"btp-gitops.io/deprovision": "soon"}
    write(source, record)
    assert 'must be "true" or "false"' in refused_alike(source, RenderCache(directory))
    record["metadata"]["annotations"] = {"btp-gitops.io/deprovision": "true"}
    write(source, record)
    _, result = same_as_uncached(source, directory)
    assert "cap-tenant.bookshop.customer-003" not in {app.app for app in reused(result)}


def test_a_record_the_fast_json_writer_refuses_is_packed_all_the_same(source: Path, tmp_path: Path) -> None:
    """A tenant record in a file whose name is not UTF-8 (a byte 0xff: Python shows it as a lone
    surrogate, which orjson refuses to write) is packed by the standard writer, as every record
    was before, and the next render takes it and every other record from the pack, with the same
    output."""
    record = tenant(90, "bookshop-1-1-0")
    written = write(source, record)
    odd = os.path.join(os.fsencode(written.parent), b"customer-090-\xff.yaml")
    os.rename(written, odd)
    age(source)
    directory = tmp_path / "cache"
    first, _ = same_as_uncached(source, directory)
    assert first.packs_written == 1
    (pack,) = packs(directory)
    shown = [item[0] for item in split_pack(pack)[1]["records"]]
    assert any(name.endswith("customer-090-\udcff.yaml") for name in shown)
    after, result = same_as_uncached(source, directory)
    assert after.hits == records(source)
    assert "cap-tenant.bookshop.customer-090" in {app.app for app in reused(result)}
