"""Move pure-Python modules of the image into a zip archive that Python imports from (zipimport).

Run by scripts/build-image.sh inside the image's root filesystem, with the image's own Python:

    python3 image-zip-modules.py ARCHIVE DIRECTORY NAME...   # move DIRECTORY/NAME into ARCHIVE
    python3 image-zip-modules.py --prune-records SITE_PACKAGES

Why: the generated Kubernetes client, the Kubernetes JSON schemas and the standard library are
some 100 MB of small text files on disk and a fifth of that compressed. Each module keeps its
source beside its byte-code in the archive, so tracebacks and `inspect` still show source lines.

The byte-code is compiled here as unchecked-hash .pyc files (PEP 552): the archive is written
once, at build time, and never changes, so there is nothing to check against and no timestamp to
go stale. The archive is reproducible: entries sorted, every date SOURCE_DATE_EPOCH (not before
1980, the zip format's epoch), fixed modes, the same zlib at the same level.

--prune-records drops from each dist-info RECORD the files that are no longer in the directory
(moved into an archive or removed by the build), so a RECORD lists what is installed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path

FILE_MODE = 0o644 << 16  # -rw-r--r--, in the upper 16 bits as zip stores Unix modes
ZIP_EPOCH = 315532800  # 1980-01-01T00:00:00Z, the earliest time a zip entry can hold


def entry_time() -> tuple[int, int, int, int, int, int]:
    epoch = max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), ZIP_EPOCH)
    return time.gmtime(epoch)[:6]


def files_of(directory: Path, name: str) -> list[Path]:
    """The files of module or package `name` in `directory` (relative), without byte-code."""
    top = directory / name
    if top.is_file():
        return [Path(name)]
    if not top.is_dir():
        sys.exit(f"image-zip-modules: {top} is not a module or package")
    found = []
    for path in top.rglob("*"):
        if path.suffix == ".so" or ".so." in path.name:
            sys.exit(f"image-zip-modules: {path} is native code, which Python cannot import from a zip")
        if "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if path.is_symlink() or not path.is_file():
            continue
        found.append(path.relative_to(directory))
    return found


def byte_code(source: bytes, display_path: str) -> bytes:
    """An unchecked-hash .pyc of `source`, compiled in memory (the same format py_compile writes)."""
    code = compile(source, display_path, "exec", dont_inherit=True)
    import marshal  # noqa: PLC0415 - only this mode needs it

    flags = (0b01).to_bytes(4, "little")  # hash-based, not checked against the source
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=entry_time())
    info.external_attr = FILE_MODE
    info.create_system = 3  # Unix
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data, compresslevel=9)


def move_into_archive(archive_path: Path, directory: Path, names: list[str]) -> None:
    if archive_path.exists():
        sys.exit(f"image-zip-modules: {archive_path} exists already")
    relative = sorted({path for name in names for path in files_of(directory, name)}, key=str)
    with zipfile.ZipFile(archive_path, "w") as archive:
        for path in relative:
            data = (directory / path).read_bytes()
            add(archive, path.as_posix(), data)
            if path.suffix == ".py":
                add(archive, path.as_posix() + "c", byte_code(data, f"{archive_path}/{path.as_posix()}"))
    os.chmod(archive_path, 0o644)
    for name in names:
        top = directory / name
        if top.is_dir():
            shutil.rmtree(top)
        else:
            top.unlink()
            cached = directory / "__pycache__"
            for stale in cached.glob(f"{Path(name).stem}.*.pyc") if cached.is_dir() else []:
                stale.unlink()


def prune_records(site_packages: Path) -> None:
    for record in sorted(site_packages.glob("*.dist-info/RECORD")):
        lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if (site_packages / line.split(",", 1)[0]).exists()]
        if kept != lines:
            record.write_text("".join(kept), encoding="utf-8")


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--prune-records":
        prune_records(Path(argv[1]))
    elif len(argv) >= 3 and not argv[0].startswith("-"):
        move_into_archive(Path(argv[0]), Path(argv[1]), argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
