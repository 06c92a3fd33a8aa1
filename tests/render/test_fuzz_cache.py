"""Fuzzing the render cache and the render pack as an attacker who can write the cache directory.

Each example takes a cache directory a real render filled (entries and a pack for examples/cap-app
and its records), damages or forges it at random, and renders again through the CLI in process
(`render --stdout --cache-dir`): bit flips, truncation, an index field of another type, keys that
are not the objects', an app's file names, blob ids, texts or their span at odds with each other,
an alias bomb or another object in an app's file, origins at odds with its objects, a file planted in an app (a Secret with the canary, a private key, a
privileged Pod), an entry's payload changed, and links, FIFOs and directories where files were.
A forgery is sealed with whatever checksum anyone can compute, and half of them also with the
user's cache key (a stolen key), so that the checks behind the MAC are reached.

Whatever the damage: no traceback and no exit 70; no Secret with data, no private key and no
canary in the output; and without the key, the output of a render that succeeds is byte for byte
the output of `--no-cache` (a forgery is never used). Nothing outside the cache directory is
touched (a canary file beside it, reached through a planted link, is hashed before and after).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.transforms.guards import credential_problems
from tests.support.forged_cache import (
    PLANTED_SECRET,
    PRIVILEGED_POD,
    add_file,
    aged_example,
    app_files,
    app_keys,
    entries,
    packs,
    put_keys,
    put_texts,
    replace_text,
    seal_entry,
    seal_pack,
    split_pack,
    without_packs,
    write_pack,
)
from tests.support.fuzzing import (
    assert_clean_exit,
    assert_no_canary,
    run_in_process,
    snapshot,
    values,
)
from tests.support.keys import pem_rsa

# A render per example (a second under load): a modest budget, and no explain phase (it reruns
# the failing example a hundred times).
FUZZ = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),
)
PRIVATE_KEY = pem_rsa()
KEY_LINE = PRIVATE_KEY.splitlines()[2]  # a line of the key's base64, in no output
KEY_FILE = "key: |\n" + "".join(f"  {line}\n" for line in PRIVATE_KEY.splitlines())


class Prepared:
    """One source tree and a cache directory a render filled, made once for every example."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="fuzz-cache-"))
        self.source = aged_example(self.root / "source")
        self.outside = self.root / "outside"
        self.outside.mkdir()
        (self.outside / "secret.yaml").write_text(PLANTED_SECRET)
        self.cache = without_packs(self.root / "cache")
        uncached = run_in_process(["render", str(self.source), "--stdout", "--no-cache"])
        # First the entries (a render that cannot write the pack keeps its records in them),
        # then the pack: a render that writes one writes no entries, so both are there to damage.
        entered = run_in_process(["render", str(self.source), "--stdout", "--cache-dir", str(self.cache)])
        (self.cache / "packs").unlink()
        filled = run_in_process(["render", str(self.source), "--stdout", "--cache-dir", str(self.cache)])
        assert uncached.code == entered.code == filled.code == 0, (uncached.stderr, filled.stderr)
        assert filled.stdout == uncached.stdout
        self.expected = uncached.stdout
        assert packs(self.cache) and entries(self.cache)


_PREPARED: list[Prepared] = []


def prepared() -> Prepared:
    if not _PREPARED:
        _PREPARED.append(Prepared())
    return _PREPARED[0]


# --- damage ----------------------------------------------------------------------------------

Draw = Callable[..., Any]  # hypothesis' data.draw
Damage = Callable[[Path, Draw, bool], None]  # (cache directory, draw, signed)


def _flip_bits(cache: Path, draw: Draw, sign: bool) -> None:
    target = draw(st.sampled_from([*packs(cache), *entries(cache)]))
    data = bytearray(target.read_bytes())
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        offset = draw(st.integers(min_value=0, max_value=len(data) - 1))
        data[offset] ^= 1 << draw(st.integers(min_value=0, max_value=7))
    if target.suffix == ".pack" and b"\n" in data:
        head, body = bytes(data).split(b"\n", 1)
        try:
            fields = json.loads(head)
        except ValueError:
            fields = None
        if isinstance(fields, dict):
            seal_pack(fields, body, sign=sign)
            data = bytearray(json.dumps(fields).encode() + b"\n" + body)
    target.write_bytes(bytes(data))


def _truncate(cache: Path, draw: Draw, sign: bool) -> None:
    target = draw(st.sampled_from([*packs(cache), *entries(cache)]))
    data = target.read_bytes()
    target.write_bytes(data[: draw(st.integers(min_value=0, max_value=len(data) - 1))])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replace_at(document: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return document


def _index_field(cache: Path, draw: Draw, sign: bool) -> None:
    (pack,) = packs(cache)
    fields, index, blob = split_pack(pack)
    record = draw(st.integers(min_value=0, max_value=len(index["records"]) - 1))
    path = draw(st.sampled_from(_paths(index["records"][record])))
    index["records"][record] = _replace_at(index["records"][record], path, draw(values))
    write_pack(pack, fields, index, blob, sign=sign)


def _header_field(cache: Path, draw: Draw, sign: bool) -> None:
    (pack,) = packs(cache)
    fields, index, blob = split_pack(pack)
    field = draw(st.sampled_from(sorted(fields)))
    fields[field] = draw(values)
    encoded = json.dumps(index).encode()
    body = encoded + blob
    pack.write_bytes(json.dumps(fields, default=repr).encode() + b"\n" + body)


def _app_change(change: Callable[[list[Any], bytearray, Draw], None]) -> Damage:
    def damage(cache: Path, draw: Draw, sign: bool) -> None:
        (pack,) = packs(cache)
        fields, index, blob = split_pack(pack)
        apps = [record[6] for record in index["records"] if record[6] is not None]
        data = bytearray(blob)
        change(draw(st.sampled_from(apps)), data, draw)
        write_pack(pack, fields, index, bytes(data), sign=sign)

    damage.__name__ = change.__name__
    return damage


def _plant(app: list[Any], blob: bytearray, draw: Draw) -> None:
    text = draw(st.sampled_from([PLANTED_SECRET, PRIVILEGED_POD, KEY_FILE]))
    add_file(app, blob, draw(st.sampled_from(["planted.yaml", "../planted.yaml", "x/planted.yaml"])), text)


def _bomb(app: list[Any], blob: bytearray, draw: Draw) -> None:
    levels = draw(st.sampled_from([6, 12]))  # 10**6 strings: past the alias bound; 10**12
    lines = [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: bomb",
        "data:",
        '  l0: &l0 ["x", "x"]',
    ]
    lines += [f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels + 1)]
    replace_text(app, blob, "\n".join(lines) + "\n", draw(st.integers(min_value=0, max_value=7)))
    put_keys(app, [*app_keys(app), app_keys(app)[0]])  # a duplicate key: the render reads the objects


def _keys(app: list[Any], blob: bytearray, draw: Draw) -> None:
    keys = app_keys(app)
    action = draw(st.sampled_from(["duplicate", "drop", "other"]))
    if action == "duplicate":
        keys.append(keys[0])
    elif action == "drop" and keys:
        keys.pop()
    else:
        keys[0] = draw(st.text(max_size=30))
    put_keys(app, keys)


def _files(app: list[Any], blob: bytearray, draw: Draw) -> None:
    """The app's compact file index at odds with itself: a name, id or text more or less, a name
    or id of another form, the texts' span moved, bytes of its texts replaced."""
    names, ids, start, end = app[4]
    action = draw(st.sampled_from(["name", "id", "text", "span", "bytes"]))
    if action == "name":
        app[4][0] = draw(st.sampled_from(["", names + "\0", "\0" + names, names.rpartition("\0")[0]]))
    elif action == "id":
        app[4][1] = draw(st.sampled_from([ids[:-40], ids + ids[:40], ids[:-1], ids.upper()]))
    elif action == "text":
        extra = draw(st.sampled_from([b"\0", b"\0" + PLANTED_SECRET.encode()]))
        put_texts(app, blob, bytes(blob[start:end]) + extra)
    elif action == "span":
        shift = draw(st.integers(min_value=-len(blob) - 2, max_value=len(blob) + 2))
        app[4][draw(st.sampled_from([2, 3]))] += shift
    else:
        at = draw(st.integers(min_value=start, max_value=max(start, end - 1)))
        blob[at : at + 1] = draw(st.binary(min_size=1, max_size=1))


def _objects(app: list[Any], blob: bytearray, draw: Draw) -> None:
    """An object file holding another object (a value replaced somewhere in it), or the origins
    at odds with the objects; a duplicate key, so that the render reads the objects back."""
    if draw(st.booleans()):
        at = draw(st.integers(min_value=0, max_value=7))
        files = [entry for entry in app_files(app, blob) if not entry[0].endswith("kustomization.yaml")]
        body = yaml.safe_load(files[at % len(files)][1])
        body = _replace_at(body, draw(st.sampled_from(_paths(body))), draw(values))
        replace_text(app, blob, json.dumps(body, default=repr), at)
    else:
        app[6] = draw(st.sampled_from(["", "\0", "a\0b\0c", app[6] + "\0" + app[6]]) | st.text(max_size=20))
    put_keys(app, [*app_keys(app), app_keys(app)[0]])


def _entry_payload(cache: Path, draw: Draw, sign: bool) -> None:
    packs_dir = cache / "packs"  # the entries are what the render reads
    if packs_dir.is_symlink():  # made a link to a copy by `_special_file` before this damage
        packs_dir.unlink()
    else:
        shutil.rmtree(packs_dir)
    entry = draw(st.sampled_from(entries(cache)))
    head, body = entry.read_bytes().split(b"\n", 1)
    header, payload = json.loads(head), json.loads(body)
    path = draw(st.sampled_from(_paths(payload)))
    payload = _replace_at(payload, path, draw(values | st.just(PLANTED_SECRET)))
    data = json.dumps(payload, default=repr).encode()
    seal_entry(header, data, sign=sign)
    entry.write_bytes(json.dumps(header).encode() + b"\n" + data)


def _special_file(cache: Path, draw: Draw, sign: bool) -> None:
    target = draw(st.sampled_from([*packs(cache), *entries(cache), cache / "usage"]))
    kind = draw(st.sampled_from(["fifo", "link-zero", "link-outside", "directory", "linked-dir"]))
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return  # removed by a damage before this one
    if not stat.S_ISREG(mode):
        return  # made a special file by a damage before this one: reading a FIFO would block
    data = target.read_bytes()
    if kind == "linked-dir":  # the whole shard (or packs/) a link to a copy outside
        copy = cache.parent / f"copy-{target.parent.name}"
        shutil.copytree(target.parent, copy)
        shutil.rmtree(target.parent)
        target.parent.symlink_to(copy, target_is_directory=True)
        return
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-zero":
        target.symlink_to("/dev/zero")
    elif kind == "link-outside":
        outside = cache.parent / f"outside-{target.name}"
        outside.write_bytes(data)  # the right bytes, reached through a link
        target.symlink_to(outside)
    else:
        target.mkdir()


DAMAGE: list[Damage] = [
    _flip_bits,
    _truncate,
    _index_field,
    _header_field,
    _app_change(_plant),
    _app_change(_bomb),
    _app_change(_keys),
    _app_change(_files),
    _app_change(_objects),
    _entry_payload,
    _special_file,
]


@st.composite
def damaged(draw: st.DrawFn) -> tuple[list[Damage], bool]:
    return draw(st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=2)), draw(st.booleans())


@FUZZ
@given(data=st.data(), plan=damaged())
def test_a_damaged_or_forged_cache_never_leaks_nor_crashes(
    data: st.DataObject, plan: tuple[list[Damage], bool]
) -> None:
    ready = prepared()
    damages, sign = plan
    with tempfile.TemporaryDirectory(dir=ready.root) as work:
        cache = Path(work) / "cache"
        shutil.copytree(ready.cache, cache, symlinks=True)
        (Path(work) / "canary.yaml").write_text(PLANTED_SECRET)
        before = snapshot(ready.root, skip=Path(work))
        for damage in damages:
            try:
                damage(cache, data.draw, sign)
            except (ValueError, IndexError, KeyError, TypeError, FileNotFoundError):
                # An earlier damage may have left no pack to take apart (a header field of the
                # wrong type, a truncated file): this one does not apply.
                event("damage not applicable")
        event(f"{'+'.join(d.__name__ for d in damages)}, {'signed' if sign else 'unsigned'}")
        run = run_in_process(["render", str(ready.source), "--stdout", "--cache-dir", str(cache)])
        event(f"exit {run.code}")
        assert_clean_exit(run)
        assert_no_canary([run.stdout, run.stderr])
        assert KEY_LINE not in run.stdout + run.stderr
        assert "PRIVATE KEY-----" not in run.stdout
        try:
            printed = [Manifest(body, "stdout") for body in yaml.safe_load_all(run.stdout) if body]
        except yaml.YAMLError:
            # Only a text signed with the key could be other than YAML; a text of it that could
            # spell a Secret would have been parsed, and refused, by the guard.
            assert sign
            printed = []
        assert not credential_problems(printed, {"stdout": run.stdout})  # the guard's own rules
        if run.code == 0 and not sign:
            assert run.stdout == ready.expected
        if run.code != 0:
            assert run.stdout == ""
        assert snapshot(ready.root, skip=Path(work)) == before
