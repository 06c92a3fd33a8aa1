"""Copy the bundled example sources out of the installation, for `btp-gitops examples DIR`.

The docs render `examples/...`; someone who installed the wheel has no checkout, so the examples
ship inside the package (`bundled.examples_dir`) and this writes them to a directory of theirs.
Nothing already there is overwritten unless asked, nothing is deleted, and no file is written
through a symbolic link found under the destination (a link could point anywhere).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.core.errors import OutputError, UsageError
from btp_gitops.generator.io import bundled


@dataclass(frozen=True)
class WrittenExamples:
    directory: Path
    examples: tuple[str, ...]  # the top-level example directories and files, sorted
    files: tuple[str, ...]  # every file written, relative to `directory`, sorted


def bundled_example_files() -> list[str]:
    """The example files, relative to the examples folder (dotfiles and dot-directories included)."""
    root = bundled.examples_dir()
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.name != "__init__.py"
    )


def _link_under(directory: Path, relative: str) -> Path | None:
    """The first symbolic link on the way from `directory` to `directory/relative`, if any."""
    current = directory
    for part in Path(relative).parts:
        current = current / part
        if current.is_symlink():
            return current
    return None


def write_examples(directory: Path, *, overwrite: bool) -> WrittenExamples:
    source = bundled.examples_dir()
    files = bundled_example_files()
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise UsageError(f"{directory}: not a directory")
    links = [link for name in files if (link := _link_under(directory, name)) is not None]
    if links:
        raise UsageError(f"{links[0]}: a symbolic link where an example file goes; nothing written")
    blocked = [
        parent
        for name in files
        for parent in (directory / name).parents
        if parent.is_relative_to(directory) and parent.exists() and not parent.is_dir()
    ]
    if blocked:
        raise UsageError(f"{blocked[0]}: a file where the examples need a directory; nothing written")
    present = [name for name in files if (directory / name).exists()]
    if present and not overwrite:
        shown = ", ".join(present[:3]) + (f" and {len(present) - 3} more" if len(present) > 3 else "")
        raise UsageError(
            f"{directory}: already holds example files ({shown}); nothing written "
            "(pass --overwrite to replace them, or name another directory)"
        )
    for name in files:
        _write_one(source / name, directory / name)
    examples = sorted({Path(name).parts[0] for name in files})
    return WrittenExamples(directory, tuple(examples), tuple(files))


def _write_one(source: Path, target: Path) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    created = False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        # a new file, never one planted there (O_EXCL), never through a link (O_NOFOLLOW)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        created = True
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, target)
    except OSError as error:
        if created:
            partial.unlink(missing_ok=True)
        raise OutputError(f"{target}: {error.strerror or error}") from error
