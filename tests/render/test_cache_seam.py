"""A record the render cache hands back, its app with it, is still a record to the rules across
records (issue 32: the cache's one seam is the pipeline's; the CAP domain reads every record as a
tenant like any other).

Through the CLI as users run it. The cache is forged with the user's key (stolen), as in
test_cache_forgery: a tenant record in the render pack, or in a cache entry, says it has another
record's tenant id or subdomain while its app stays the one packed. The app is taken without
planning the tenant again, but the render is refused with the very problems a render without
the cache reports for the same records.
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

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CLI, EXAMPLES
from tests.support.forged_cache import entries, forge_entry, packs, split_pack, without_packs, write_pack

HOUR_AGO = time.time_ns() - 3600 * 10**9
GLOBEX_ID = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"  # examples/cap-app/tenants/globex.yaml


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """examples/cap-app with its files an hour old (the pack takes a record by its identity)."""
    target = tmp_path / "source"
    shutil.copytree(EXAMPLES / "cap-app", target)
    for path in target.rglob("*.yaml"):
        os.utime(path, ns=(HOUR_AGO, HOUR_AGO))
    return target


def render(source: Path, *cache: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "render", str(source), "--stdout", *cache],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=source.parent,
    )


def warm(source: Path, directory: Path, where: str) -> str:
    """Fill the cache: with its pack, or (`entry`) with entries alone, the pack blocked."""
    if where == "entry":
        without_packs(directory)
    filled = render(source, "--cache-dir", str(directory))
    assert filled.returncode == 0, filled.stderr
    return filled.stdout


def _entry_name(entry: Path) -> str:
    payload = json.loads(entry.read_bytes().split(b"\n", 1)[1])
    return str(payload["body"]["metadata"]["name"])


def forge_record(directory: Path, where: str, change: dict[str, str]) -> None:
    """Acme's record says `change` (spec fields) in the pack, or in its cache entry (the pack
    blocked), signed with the key; its app and application inputs left as they were."""
    if where == "entry":
        (entry,) = [e for e in entries(directory) if _entry_name(e) == "acme"]

        def edit(payload: dict[str, Any]) -> None:
            assert payload["app"] is not None and payload["inputs"]  # its app is taken
            payload["body"]["spec"].update(change)

        forge_entry(entry, edit, sign=True)
        return
    (pack,) = packs(directory)
    fields, index, blob = split_pack(pack)
    (record,) = [r for r in index["records"] if r[4]["metadata"]["name"] == "acme"]
    assert record[6] is not None and record[5]  # its app is taken
    record[4]["spec"].update(change)
    write_pack(pack, fields, index, blob, sign=True)


def uncached_refusal(source: Path, change: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The render without a cache of the records as the forged cache says they are."""
    path = source / "tenants" / "acme.yaml"
    body = yaml.safe_load(path.read_text())
    body["spec"].update(change)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return render(source, "--no-cache")


@pytest.mark.parametrize("where", ["pack", "entry"])
def test_a_forged_cached_record_keeps_its_app(source: Path, tmp_path: Path, where: str) -> None:
    """The ground the next test stands on: a record that says a tenant id no other record has is
    taken with its app as cached, not planned and rendered again (the output still carries the
    tenant id the app was made with)."""
    directory = tmp_path / "cache"
    expected = warm(source, directory, where)
    forge_record(directory, where, {"tenantId": "00000000-0000-4000-8000-0000000000aa"})
    run = render(source, "--cache-dir", str(directory))
    assert run.returncode == 0, run.stderr
    assert run.stdout == expected
    assert "00000000-0000-4000-8000-0000000000aa" not in run.stdout


@pytest.mark.parametrize("where", ["pack", "entry"])
@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"tenantId": GLOBEX_ID}, f"tenant {GLOBEX_ID} is also CAPTenant bookshop/acme"),
        ({"subDomain": "globex"}, "is also served by CAPTenant bookshop/acme"),
    ],
    ids=["tenant-id", "subdomain"],
)
def test_a_cached_record_taking_another_records_tenant_id_or_subdomain_is_refused(
    source: Path, tmp_path: Path, where: str, change: dict[str, str], problem: str
) -> None:
    directory = tmp_path / "cache"
    warm(source, directory, where)
    forge_record(directory, where, change)
    cached = render(source, "--cache-dir", str(directory))
    assert "Traceback" not in cached.stderr, cached.stderr
    assert cached.returncode == ExitCode.INPUT, cached.stderr
    assert cached.stdout == ""
    assert problem in cached.stderr, cached.stderr
    uncached = uncached_refusal(source, change)
    assert uncached.returncode == ExitCode.INPUT
    assert cached.stderr == uncached.stderr
