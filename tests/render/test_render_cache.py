"""The render cache (io.render_cache, pipeline.cached_sources): the same bytes with and without it.

Every render here goes through the real pipeline (loading, schema validation, the CAP domain,
layout, guards) in process; the cache is a real directory. Each scenario renders with the cache
and with none, and compares every file and every note; the cache's counters show what was
taken from it and what was written.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

import btp_gitops
from btp_gitops.generator.core.errors import InvalidSpec, SchemaViolation
from btp_gitops.generator.core.sources import SourceDocument
from btp_gitops.generator.io import render_cache, render_pack
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.render_cache import Entry, RenderCache
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.io.sources import source_files
from btp_gitops.generator.pipeline import render as render_module
from btp_gitops.generator.pipeline.cached_sources import CachedSources, Record
from btp_gitops.generator.pipeline.render import RenderResult, render_cluster
from btp_gitops.generator.pipeline.tenant_renders import TenantRenders
from btp_gitops.generator.wiring.objects import DEFAULT_TARGET, FLUX, TargetOptions
from tests.conftest import CLI, EXAMPLES, RunCli, read_tree
from tests.support.forged_cache import packs, without_packs

ENGINE = EmbeddedHelm()
SCHEMAS = load_schema_registry()
FLUX_TARGET = TargetOptions(target=FLUX)


def tenant(index: int, current: str | None = "bookshop-1-1-0", **spec: Any) -> dict[str, Any]:
    name = f"customer-{index:03d}"
    record: dict[str, Any] = {
        "apiVersion": "sme.sap.com/v1alpha1",
        "kind": "CAPTenant",
        "metadata": {"name": name, "namespace": "bookshop"},
        "spec": {
            "capApplicationInstance": "bookshop",
            "subDomain": name,
            "tenantId": f"{index:08x}-5d2b-4c8e-9a3f-1b6d2c4e8f00",
            **spec,
        },
    }
    if current is not None:
        record["status"] = {"state": "Ready", "currentCAPApplicationVersionInstance": current}
    return record


def write(source: Path, record: dict[str, Any]) -> Path:
    path = source / "tenants" / f"{record['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    return path


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """examples/cap-app (two versions, two domains, three tenants) and eight more tenants: on the
    newest version, one version behind (an upgrade), and not provisioned yet."""
    target = tmp_path / "source"
    shutil.copytree(EXAMPLES / "cap-app", target)
    for index in range(8):
        current = ("bookshop-1-1-0", "bookshop-1-0-0", None)[index % 3]
        write(target, tenant(index, current))
    return target


def render(source: Path, cache: RenderCache | None, target: TargetOptions = DEFAULT_TARGET) -> RenderResult:
    return render_cluster((source,), "demo", ENGINE, SCHEMAS, target=target, cache=cache)


def outcome(result: RenderResult) -> tuple[dict[str, str], Any]:
    return result.files, result.report()


def assert_same_as_uncached(
    source: Path, directory: Path, target: TargetOptions = DEFAULT_TARGET, *, pack: bool = False
) -> RenderCache:
    """Render with the cache and without. Without the render pack by default (io.render_pack,
    tested in test_render_pack: a render that writes the pack keeps no entries), so that the
    entries are what the render reads and writes; `pack=True`: with it."""
    if not pack:
        without_packs(directory)
    elif (directory / render_pack.DIRECTORY).is_file():
        (directory / render_pack.DIRECTORY).unlink()
    cache = RenderCache(directory)
    cached = render(source, cache, target)
    assert outcome(cached) == outcome(render(source, None, target))
    return cache


def records(source: Path) -> int:
    return len(list((source / "tenants").glob("*.yaml")))


def entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("??/*.json") if p.is_file())


@pytest.mark.parametrize("target", [DEFAULT_TARGET, FLUX_TARGET], ids=["argocd", "flux"])
def test_cold_warm_and_one_tenant_changed_give_the_same_bytes(
    source: Path, tmp_path: Path, target: TargetOptions
) -> None:
    directory = tmp_path / "cache"
    cold = assert_same_as_uncached(source, directory, target)
    assert (cold.hits, cold.written) == (0, records(source))

    warm = assert_same_as_uncached(source, directory, target)
    assert (warm.hits, warm.written) == (records(source), 0)

    write(source, tenant(100))  # one tenant added
    added = assert_same_as_uncached(source, directory, target)
    assert (added.hits, added.written) == (records(source) - 1, 1)

    write(source, tenant(3, "bookshop-1-1-0", version="1.1.0"))  # one tenant changed
    changed = assert_same_as_uncached(source, directory, target)
    assert (changed.hits, changed.written) == (records(source) - 1, 1)

    (source / "tenants" / "customer-004.yaml").unlink()  # one tenant removed
    removed = assert_same_as_uncached(source, directory, target)
    assert (removed.hits, removed.written) == (records(source), 0)


@pytest.mark.parametrize("pack", [True, False], ids=["pack", "entries"])
def test_a_changed_application_renders_every_tenant_again(source: Path, tmp_path: Path, pack: bool) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    version = source / "version-1.1.0.yaml"
    version.write_text(version.read_text().replace("version: 1.1.0", "version: 1.2.0", 1))
    changed = assert_same_as_uncached(source, directory, pack=pack)
    # Every record was still taken from its entry (not parsed), and every app rendered again:
    # the pack keeps the new apps (the entries, without a pack, theirs).
    assert (changed.hits, changed.written) == (records(source), 0 if pack else records(source))
    assert changed.packs_written == (1 if pack else 0)
    again = assert_same_as_uncached(source, directory, pack=pack)
    assert (again.hits, again.written) == (records(source), 0)


def test_a_record_moved_to_another_file_is_read_again(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    (source / "tenants" / "customer-001.yaml").rename(source / "tenants" / "moved.yaml")
    moved = assert_same_as_uncached(source, directory)  # origins and notes name the file
    assert moved.written == 1


def _first_entry(directory: Path) -> Path:
    return entries(directory)[0]


def _truncate(entry: Path, _: Path) -> None:
    entry.write_bytes(entry.read_bytes()[:-40])


def _flip(entry: Path, _: Path) -> None:
    data = bytearray(entry.read_bytes())
    data[-20] ^= 0x01
    entry.write_bytes(bytes(data))


def _foreign(entry: Path, directory: Path) -> None:
    other = next(p for p in entries(directory) if p != entry)
    entry.write_bytes(other.read_bytes())  # whole and digest-checked, but another key's


def _garbage(entry: Path, _: Path) -> None:
    entry.write_bytes(b"\x00\xff not json at all")


def _symlink(entry: Path, directory: Path) -> None:
    outside = directory.parent / "outside.json"
    outside.write_bytes(entry.read_bytes())  # the right bytes, but reached through a link
    entry.unlink()
    entry.symlink_to(outside)


def _directory(entry: Path, _: Path) -> None:
    entry.unlink()
    entry.mkdir()


@pytest.mark.parametrize("damage", [_truncate, _flip, _foreign, _garbage, _symlink, _directory])
def test_a_damaged_entry_is_ignored_and_rendered_again(source: Path, tmp_path: Path, damage: Any) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    entry = _first_entry(directory)
    damage(entry, directory)
    after = assert_same_as_uncached(source, directory, pack=False)
    assert after.hits == records(source) - 1
    if damage not in (_symlink, _directory):  # a link or a directory is not written over
        assert after.written == 1
        assert assert_same_as_uncached(source, directory, pack=False).hits == records(source)


def test_a_linked_shard_directory_is_not_followed(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    shard = _first_entry(directory).parent
    elsewhere = tmp_path / "elsewhere"
    shard.rename(elsewhere)
    shard.symlink_to(elsewhere)
    after = assert_same_as_uncached(source, directory, pack=False)
    assert after.hits == records(source) - len(list(elsewhere.glob("*.json")))


def test_a_cache_directory_that_cannot_be_made_is_no_error(source: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    cache = assert_same_as_uncached(source, blocked / "cache", pack=True)
    assert (cache.hits, cache.written, cache.packs_written) == (0, 0, 0)


def test_rules_across_tenants_hold_for_records_taken_from_the_cache(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    # A new record takes the subdomain and the tenant id of records whose entries are warm.
    write(source, tenant(200, subDomain="customer-001", tenantId="00000002-5d2b-4c8e-9a3f-1b6d2c4e8f00"))
    with pytest.raises(InvalidSpec) as uncached:
        render(source, None)
    with pytest.raises(InvalidSpec) as cached:
        render(source, RenderCache(directory))
    assert cached.value.lines() == uncached.value.lines()
    messages = "\n".join(problem.render() for problem in cached.value.problems)
    assert (
        "spec.subDomain: customer-001." in messages
        and "is also served by CAPTenant bookshop/customer-001" in messages
    )
    assert "tenant 00000002-5d2b-4c8e-9a3f-1b6d2c4e8f00 is also CAPTenant bookshop/customer-002" in messages


def test_a_schema_violation_in_a_changed_record_is_found(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    write(source, tenant(1, spec_unknown="x"))
    with pytest.raises(SchemaViolation) as cached:
        render(source, RenderCache(directory))
    with pytest.raises(SchemaViolation) as uncached:
        render(source, None)
    assert cached.value.lines() == uncached.value.lines()
    assert "spec.spec_unknown: unknown field" in "\n".join(cached.value.lines())


def test_the_directory_is_bounded(source: Path, tmp_path: Path) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    size = sum(p.stat().st_size for p in entries(directory))
    # The order entries were last used in, within the last day: a hit then leaves the time as
    # it is (it refreshes an older one), so the render below does not reorder them.
    past = time.time() - 3600
    for number, entry in enumerate(entries(directory)):
        os.utime(entry, (past + number, past + number))
    oldest = entries(directory)
    oldest.sort(key=lambda p: p.stat().st_mtime)
    write(source, tenant(300))
    cache = RenderCache(directory, max_bytes=size // 2)
    assert outcome(render(source, cache)) == outcome(render(source, None))
    left = entries(directory)
    assert sum(p.stat().st_size for p in left) <= size // 2 * 0.9 + 1
    assert oldest[0] not in left  # the one used least recently went first
    assert len(oldest) < 3000
    assert any(p.stat().st_mtime > past + 3000 for p in left)  # the entry written now stays


def usage(directory: Path) -> dict[str, Any]:
    ledger: dict[str, Any] = json.loads((directory / "usage").read_text())
    return ledger


def test_a_render_that_wrote_entries_counts_them_in_the_ledger_without_a_scan(
    source: Path, tmp_path: Path
) -> None:
    directory = tmp_path / "cache"
    first = assert_same_as_uncached(source, directory)
    assert first.scans == 1  # no ledger yet: the directory is scanned
    size = sum(p.stat().st_size for p in entries(directory))
    assert usage(directory) == {"format": render_cache.FORMAT, "bytes": size, "renders": 0}
    write(source, tenant(300))
    second = assert_same_as_uncached(source, directory)
    assert (second.written, second.scans) == (1, 0)
    grown = sum(p.stat().st_size for p in entries(directory))
    assert grown > size
    assert usage(directory) == {"format": render_cache.FORMAT, "bytes": grown, "renders": 1}
    assert assert_same_as_uncached(source, directory).written == 0  # nothing written: no count
    assert usage(directory)["renders"] == 1


def test_the_ledger_over_the_bound_or_after_enough_renders_scans_the_directory(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    size = sum(p.stat().st_size for p in entries(directory))
    # A ledger saying less than there is (a lost count, or a forged one) is set right by the
    # scan after RESCAN_AFTER renders: the bound holds again then.
    (directory / "usage").write_text(
        json.dumps({"format": render_cache.FORMAT, "bytes": 0, "renders": render_cache.RESCAN_AFTER - 2})
    )
    write(source, tenant(300))
    cache = RenderCache(directory, max_bytes=size // 2)
    assert outcome(render(source, cache)) == outcome(render(source, None))
    assert (cache.written, cache.scans) == (1, 0)  # the ledger says 0 bytes and 63 renders
    assert len(entries(directory)) == records(source)
    write(source, tenant(301))
    cache = RenderCache(directory, max_bytes=size // 2)
    assert outcome(render(source, cache)) == outcome(render(source, None))
    assert (cache.written, cache.scans) == (1, 1)  # the 64th render: scanned, and evicted
    left = sum(p.stat().st_size for p in entries(directory))
    assert left <= size // 2 * 0.9 + 1
    assert usage(directory) == {"format": render_cache.FORMAT, "bytes": left, "renders": 0}
    # Over the bound by the ledger's count: scanned at once.
    write(source, tenant(302))
    monkeypatch.setattr(render_cache, "RESCAN_AFTER", 1000)
    kept = len(entries(directory))
    cache = RenderCache(directory, max_bytes=left + 10)
    assert outcome(render(source, cache)) == outcome(render(source, None))
    # The new record's entry, and again those of the records whose entries the scan removed
    # (no pack holds them here).
    assert (cache.written, cache.scans) == (records(source) - kept, 1)


def _not_json(ledger: Path) -> None:
    ledger.write_text("{not a ledger")


def _other_shape(ledger: Path) -> None:
    ledger.write_text(json.dumps({"format": render_cache.FORMAT, "bytes": -5, "renders": 0}))


def _other_format(ledger: Path) -> None:
    ledger.write_text(json.dumps({"format": "1", "bytes": 0, "renders": 0}))


def _linked(ledger: Path) -> None:
    outside = ledger.parent.parent / "outside-usage"
    outside.write_text(json.dumps({"format": render_cache.FORMAT, "bytes": 0, "renders": 0}))
    ledger.unlink()
    ledger.symlink_to(outside)


def _removed(ledger: Path) -> None:
    ledger.unlink()


@pytest.mark.parametrize("damage", [_not_json, _other_shape, _other_format, _linked, _removed])
def test_a_ledger_that_is_not_one_means_a_scan(source: Path, tmp_path: Path, damage: Any) -> None:
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    damage(directory / "usage")
    write(source, tenant(300))
    cache = assert_same_as_uncached(source, directory)
    assert (cache.written, cache.scans) == (1, 1)
    assert not (directory / "usage").is_symlink()
    assert usage(directory)["bytes"] == sum(p.stat().st_size for p in entries(directory))


def test_entries_of_other_code_or_another_target_are_not_used(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code digest (version and the content of generator/ and schemas/) and the target are
    part of every key."""
    directory = tmp_path / "cache"
    assert_same_as_uncached(source, directory)
    assert assert_same_as_uncached(source, directory, FLUX_TARGET).hits == 0

    monkeypatch.setattr(btp_gitops, "__version__", "0.0.0-other")
    other = render_cache.code_digest.__wrapped__()
    assert other != render_cache.code_digest()
    monkeypatch.setattr(render_cache, "code_digest", lambda: other)
    assert assert_same_as_uncached(source, directory).hits == 0


def test_the_libraries_in_the_code_digest_are_the_installed_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest names the YAML and schema libraries' versions as their metadata says, read from
    the metadata directory's name beside the module, without importlib.metadata (which reads every
    installed distribution's); a distribution with no such directory is asked of it all the same."""
    for distribution, module in (("PyYAML", "yaml"), ("jsonschema", "jsonschema")):
        assert render_cache.library_version(distribution, module) == metadata.version(distribution)
    assert render_cache.library_version("not-installed-here", "not_installed_here") == "none"

    (tmp_path / "dotted_lib").mkdir()
    (tmp_path / "dotted_lib" / "__init__.py").write_text("")
    (tmp_path / "Dotted.Lib-1.2.dist-info").mkdir()  # as an older pip names it
    (tmp_path / "dotted_lib_extra-9.9.dist-info").mkdir()  # another distribution, a longer name
    (tmp_path / "egg_lib.py").write_text("")
    (tmp_path / "egg_lib.egg-info").mkdir()  # no .dist-info: importlib.metadata reads this one
    (tmp_path / "egg_lib.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: egg-lib\nVersion: 3.1\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert render_cache.library_version("dotted-lib", "dotted_lib") == "1.2"
    assert render_cache.library_version("egg-lib", "egg_lib") == "3.1"

    # The product's own process: the digest leaves importlib.metadata unloaded.
    script = (
        "import sys\n"
        "from btp_gitops.generator.io.render_cache import code_digest\n"
        "code_digest()\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    found = subprocess.run([CLI.parent / "python", "-c", script], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


def test_render_and_diff_through_the_cli_with_and_without_the_cache(
    source: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    cached_repo, uncached_repo, directory = tmp_path / "cached", tmp_path / "uncached", tmp_path / "cache"
    for repo in (cached_repo, uncached_repo):
        repo.mkdir()
    without_packs(directory)
    for _ in range(2):  # cold, then warm
        done = run_cli("render", source, "--out", cached_repo, "--cluster", "demo", "--cache-dir", directory)
        assert done.returncode == 0, done.stderr
    assert len(entries(directory)) == records(source)
    done = run_cli("render", source, "--out", uncached_repo, "--cluster", "demo", "--no-cache")
    assert done.returncode == 0, done.stderr
    assert read_tree(cached_repo) == read_tree(uncached_repo)

    write(source, tenant(400))
    outputs = []
    for options in (["--cache-dir", str(directory)], ["--no-cache"]):
        done = run_cli("diff", source, "--against", uncached_repo, "--cluster", "demo", *options)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
        stream = run_cli("render", source, "--stdout", "--cluster", "demo", *options)
        assert stream.returncode == 0, stream.stderr
        outputs.append(stream.stdout)
    assert outputs[0] == outputs[2] and "customer-400" in outputs[0]
    assert outputs[1] == outputs[3]
    assert len(entries(directory)) == records(source)

    both = run_cli("render", source, "--stdout", "--no-cache", "--cache-dir", directory)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_the_default_directory_follows_xdg_cache_home(source: Path, tmp_path: Path) -> None:
    """There the render writes its pack: one file for every tenant record, no entries."""
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(
        [str(CLI), "render", str(source), "--stdout"],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    directory = tmp_path / "xdg" / "btp-gitops" / "render"
    assert len(packs(directory)) == 1 and entries(directory) == []


def test_concurrent_renders_share_a_directory(source: Path, tmp_path: Path) -> None:
    """Entries created in place by three renders at once: each render reads whole entries or
    none (a part is refused), and the output is the same."""
    directory = without_packs(tmp_path / "cache")
    command = [str(CLI), "render", str(source), "--stdout", "--cache-dir", str(directory)]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    expected = subprocess.run([*command[:-2], "--no-cache"], capture_output=True, check=True).stdout
    assert all(out == expected for out, _ in outputs)
    assert len(entries(directory)) == records(source)
    assert not list(directory.glob("??/.tmp-*"))


def test_source_files_come_in_path_order(tmp_path: Path) -> None:
    """The walk sorts split strings instead of Paths (a render with a warm cache is mostly the
    walk and the reads): the order is Path's, part by part, as before."""
    names = ["a/b.yaml", "a-c.yaml", "a.yaml", "A.yaml", "a/c/d.yml", "a0.yaml", "a_/x.yaml", "b.yml"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / "skipped.txt").write_text("")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.yaml").write_text("")
    found = list(source_files([tmp_path]))
    assert found == sorted(tmp_path / name for name in names)
    assert [p.relative_to(tmp_path).as_posix() for p in found][:3] == ["A.yaml", "a/b.yaml", "a/c/d.yml"]


def test_an_application_without_an_inputs_digest_never_takes_a_cached_app(tmp_path: Path) -> None:
    """`application_inputs` leaves out an application JSON cannot hold exactly: its tenants'
    entries keep their documents only, and an app found in one is not used."""
    body = tenant(1)
    document = SourceDocument("tenants/customer-001.yaml", 1, body, tmp_path)
    app = {"app": "cap-tenant.bookshop.customer-001", "notes": [], "objects": [], "texts": []}
    loaded = CachedSources([document], [], {("tenants/customer-001.yaml", 1): Record("k", document, None)})
    loaded.records[("tenants/customer-001.yaml", 1)].entry = Entry(1, body, "", app)
    assert loaded.renders({}).known == {}
    assert loaded.renders({("bookshop", "bookshop"): ""}).known == {}
    assert list(loaded.renders({("bookshop", "bookshop"): "d"}).known) == []  # another digest
    rendered = TenantRenders(rendered={("tenants/customer-001.yaml", 1): None})
    (key, entry), *more = loaded.entries(rendered, {})
    assert (key, entry.inputs, entry.app, more) == ("k", "", None, [])


def test_a_checkout_elsewhere_rendered_from_its_own_directory_finds_the_entries(
    source: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    """As in CI: a fresh checkout in another place, the same relative SOURCE, a restored cache."""
    directory = without_packs(tmp_path / "cache")
    first, second = tmp_path / "one", tmp_path / "two"
    for checkout in (first, second):
        shutil.copytree(source, checkout / "platform")
    done = run_cli("render", "platform", "--stdout", "--cache-dir", directory, cwd=first)
    assert done.returncode == 0, done.stderr
    written = {p: p.stat().st_mtime_ns for p in entries(directory)}
    again = run_cli("render", "platform", "--stdout", "--cache-dir", directory, cwd=second)
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout
    assert {p: p.stat().st_mtime_ns for p in entries(directory)} == written  # every entry found, none written


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cache"])
def test_the_cycle_collector_rests_during_a_render(
    source: Path, tmp_path: Path, cached: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A render, with the cache or without, runs with Python's cycle collector off (it would go
    over every tenant's objects again and again and find nothing to free: a tenth or more of
    a full render's CPU) and turns it back on after, also when the render fails. The thresholds are set
    so low that a collector left on would run many times during the render."""
    collections: list[str] = []
    spans: list[tuple[int, int]] = []
    rendering = render_module._render_cluster

    def observed(*args: Any, **kwargs: Any) -> RenderResult:
        start = len(collections)
        try:
            return rendering(*args, **kwargs)
        finally:
            spans.append((start, len(collections)))

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(phase)

    monkeypatch.setattr(render_module, "_render_cluster", observed)
    thresholds = gc.get_threshold()
    gc.callbacks.append(count)
    gc.set_threshold(1, 1, 1)
    try:
        result = render(source, RenderCache(tmp_path / "cache") if cached else None)
        assert gc.isenabled()
        write(source, {**tenant(99), "spec": {"subDomain": "customer-099"}})  # fails its schema
        with pytest.raises(SchemaViolation):
            render(source, RenderCache(tmp_path / "cache") if cached else None)
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    assert [end - start for start, end in spans] == [0, 0]
    assert collections  # around the renders, the collector ran (and the counter saw it)
    assert result.files
