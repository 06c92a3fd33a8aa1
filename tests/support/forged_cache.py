"""Forging render cache entries and render packs as an attacker would, in the tests.

An attacker who can write the cache directory can rewrite any file in it and fix up any
checksum anyone can compute (a CRC-32 or a sha256, as the formats before the MAC had); signing
what they wrote needs the user's cache key (io.cache_key), which is not in that directory. The
helpers sign with the key when asked to (`sign=True`: a stolen key, so that the checks behind the
MAC are exercised too), and otherwise leave the MAC the file had (a forgery without the key).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from btp_gitops.generator.io import render_cache, render_pack
from btp_gitops.generator.io.git_blobs import blob_id
from tests.conftest import EXAMPLES
from tests.support.fuzzing import CANARY_SECRET

# A pack takes a source file by its identity unless the file is racy (modified within
# `render_pack.RACY_NS` of the render that wrote the pack, so read again): the source trees these
# tests forge packs for are an hour old, so that what the pack holds is what a render uses.
HOUR_AGO = time.time_ns() - 3600 * 10**9

# What an attacker plants in a forged pack: a Secret with data (the canary, which no output or
# message may show) and a privileged Pod, both in kube-system.
PLANTED_SECRET = f"""apiVersion: v1
kind: Secret
metadata:
  name: leaked
  namespace: kube-system
data:
  token: {base64.b64encode(CANARY_SECRET.encode()).decode()}
"""
PRIVILEGED_POD = """apiVersion: v1
kind: Pod
metadata:
  name: root-shell
  namespace: kube-system
spec:
  hostPID: true
  containers:
  - name: shell
    image: busybox
    securityContext:
      privileged: true
"""


def aged_example(target: Path) -> Path:
    """examples/cap-app copied to `target`, its files an hour old (a pack takes them by identity)."""
    shutil.copytree(EXAMPLES / "cap-app", target)
    for path in target.rglob("*.yaml"):
        os.utime(path, ns=(HOUR_AGO, HOUR_AGO))
    return target


def secret() -> bytes:
    from btp_gitops.generator.io.cache_key import cache_secret  # noqa: PLC0415 - not in older formats

    key = cache_secret()
    assert key is not None
    return key


def seal_pack(fields: dict[str, Any], body: bytes, *, sign: bool) -> None:
    if "crc32" in fields:  # the format before the MAC: anyone fixes it up
        fields["crc32"] = zlib.crc32(body)
    elif sign and "blob" in fields:  # the header names the blob's digest; the MAC covers the index
        render_pack._seal(secret(), fields, body[: fields["index"]], body[fields["index"] :])
    elif sign:
        fields["mac"] = render_pack._mac(secret(), fields, body)


def seal_entry(header: dict[str, Any], body: bytes, *, sign: bool) -> None:
    if "sha256" in header:  # the format before the MAC: anyone fixes it up
        header["sha256"] = hashlib.sha256(body).hexdigest()
    elif sign:
        header["mac"] = render_cache._mac(secret(), header["key"], body)


def without_packs(directory: Path) -> Path:
    """`directory` as a cache directory where no render pack can be read or written (a regular
    file stands where the packs' directory would be): a render there keeps its tenant records in
    entries, as every render does when it cannot write the pack."""
    directory.mkdir(parents=True, exist_ok=True)
    blocked = directory / render_pack.DIRECTORY
    if blocked.is_dir() and not blocked.is_symlink():
        shutil.rmtree(blocked)
    blocked.write_text("no render packs here\n")
    return directory


def packs(directory: Path) -> list[Path]:
    """The packs in a cache directory that are files to read (a fuzzer may have left a FIFO in a
    pack's place: opening it would wait for a writer forever)."""
    return sorted(p for p in (directory / render_pack.DIRECTORY).glob("*.pack") if p.is_file())


def entries(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("??/*.json") if p.is_file())


def split_pack(pack: Path) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    """The header, the index and the blob of a pack file."""
    header, body = pack.read_bytes().split(b"\n", 1)
    fields = json.loads(header)
    return fields, json.loads(body[: fields["index"]]), body[fields["index"] :]


def write_pack(pack: Path, fields: dict[str, Any], index: dict[str, Any], blob: bytes, *, sign: bool) -> None:
    encoded = json.dumps(index).encode()
    body = encoded + blob
    fields = {**fields, "index": len(encoded), "length": len(body)}
    seal_pack(fields, body, sign=sign)
    pack.write_bytes(json.dumps(fields).encode() + b"\n" + body)


def forge_app(
    pack: Path, change: Callable[[list[Any], bytearray], None], *, record: int = 0, sign: bool = True
) -> None:
    """Rewrite the app of one record: `change(app, blob)` edits the index entry of the app and may
    append to the blob. The entry is [name, group, notes, keys, files, stages, origins]: the
    keys joined by a NUL, `files` [names joined by a NUL, their Git blob ids (40 characters each)
    in one string, start, end of the span of the blob holding their texts, NUL between them],
    the objects' origins (one for all, or each after a NUL); `app_files`, `put_files`,
    `replace_text`, `app_keys` and `put_keys` read and write these as a key's thief would."""
    fields, index, blob = split_pack(pack)
    data = bytearray(blob)
    change(index["records"][record][6], data)
    write_pack(pack, fields, index, bytes(data), sign=sign)


def app_keys(app: list[Any]) -> list[str]:
    keys: str = app[3]
    return keys.split("\0") if keys else []


def put_keys(app: list[Any], keys: list[str]) -> None:
    app[3] = "\0".join(keys)


def app_files(app: list[Any], blob: bytes | bytearray) -> list[list[str]]:
    """The app's files, [[name, text, Git blob id], ...], as its index lists them."""
    names, ids, start, end = app[4]
    if not names:
        return []
    texts = bytes(blob[start:end]).decode("utf-8", "surrogatepass").split("\0")
    return [
        [name, text, ids[40 * at : 40 * at + 40]]
        for at, (name, text) in enumerate(zip(names.split("\0"), texts, strict=False))  # as damaged
    ]


def put_texts(app: list[Any], blob: bytearray, data: bytes) -> None:
    """`data` appended to the blob as the span of the app's texts (its names and ids as they were)."""
    app[4][2:] = [len(blob), len(blob) + len(data)]
    blob += data


def put_files(app: list[Any], blob: bytearray, files: list[list[str]]) -> None:
    """`files` ([[name, text, Git blob id], ...]) as the app's: its names and ids, and its texts
    appended to the blob as its span."""
    app[4][:2] = ["\0".join(name for name, _, _ in files), "".join(oid for _, _, oid in files)]
    put_texts(app, blob, "\0".join(text for _, text, _ in files).encode("utf-8", "surrogatepass"))


def add_file(app: list[Any], blob: bytearray, name: str, text: str) -> None:
    """A file in the app's directory, listed in its kustomization.yaml as the layout would (when
    the app still has one: a fuzzer may have damaged its name or bytes first)."""
    files = app_files(app, blob)
    files.append([name, text, blob_id(text.encode())])  # as the key's thief would
    kustomization = next((entry for entry in files if entry[0] == "kustomization.yaml"), None)
    if kustomization is not None:
        old = kustomization[1]
        listed = sorted([line[2:] for line in old.splitlines() if line.startswith("- ")] + [name])
        new = old.split("resources:\n")[0] + "resources:\n" + "".join(f"- {n}\n" for n in listed)
        kustomization[1:] = [new, blob_id(new.encode())]
    put_files(app, blob, files)


def replace_text(app: list[Any], blob: bytearray, text: str, at: int | None = None) -> str:
    """`text` as the text of one of the app's object files (the first, or the one at `at` among
    them), with its blob id, as the key's thief would; the file's name."""
    files = app_files(app, blob)
    objects = [entry for entry in files if not entry[0].endswith("kustomization.yaml")]
    entry = objects[0 if at is None else at % len(objects)]
    entry[1:] = [text, blob_id(text.encode("utf-8", "surrogatepass"))]
    put_files(app, blob, files)
    return entry[0]


def forge_entry(entry: Path, change: Callable[[dict[str, Any]], None], *, sign: bool = True) -> None:
    """Rewrite an entry's payload with `change`, sealed as `sign` says."""
    head, body = entry.read_bytes().split(b"\n", 1)
    header = json.loads(head)
    payload = json.loads(body)
    change(payload)
    data = json.dumps(payload).encode()
    seal_entry(header, data, sign=sign)
    entry.write_bytes(json.dumps(header).encode() + b"\n" + data)
