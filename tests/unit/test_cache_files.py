"""`io.cache_files`: whole files or none, under a directory descriptor, and atomic writes."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from btp_gitops.generator.io.cache_files import (
    TEMPORARY_PREFIX,
    atomic_write_at,
    create_at,
    open_directory,
    open_subdirectory,
    read_whole_at,
)


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    fd = open_directory(tmp_path, create=False)
    assert fd is not None
    try:
        yield tmp_path, fd
    finally:
        os.close(fd)


def test_a_regular_file_within_the_limit_is_read_whole(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "entry").write_bytes(b"0123456789")
    assert read_whole_at(fd, "entry", 10) == b"0123456789"
    assert read_whole_at(fd, "entry", 9) is None  # one byte over the limit
    assert read_whole_at(fd, "absent", 10) is None


def test_a_link_is_not_followed(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "target").write_bytes(b"secret")
    (path / "link").symlink_to(path / "target")
    assert read_whole_at(fd, "link", 100) is None
    assert read_whole_at(fd, "target", 100) == b"secret"


def test_what_is_not_a_regular_file_is_refused_without_blocking(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "sub").mkdir()
    os.mkfifo(path / "fifo")  # no writer: a blocking open would hang here
    assert read_whole_at(fd, "sub", 100) is None
    assert read_whole_at(fd, "fifo", 100) is None


def test_a_file_longer_than_its_size_says_is_not_whole() -> None:
    """/proc files say size 0 and hold more: the one byte read beyond the size shows it."""
    fd = open_directory(Path(f"/proc/{os.getpid()}"), create=False)  # /proc/self is a link
    assert fd is not None
    try:
        assert os.stat("status", dir_fd=fd).st_size == 0
        assert read_whole_at(fd, "status", 1 << 20) is None
    finally:
        os.close(fd)


def test_an_old_file_read_with_touch_after_gets_the_current_time(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "old").write_bytes(b"a")
    (path / "new").write_bytes(b"b")
    day_ago = time.time() - 86_400
    os.utime(path / "old", (day_ago, day_ago))
    hour_ago = time.time() - 3_600
    os.utime(path / "new", (hour_ago, hour_ago))
    assert read_whole_at(fd, "old", 10, touch_after=7_200) == b"a"
    assert read_whole_at(fd, "new", 10, touch_after=7_200) == b"b"
    assert (path / "old").stat().st_mtime > time.time() - 60
    assert (path / "new").stat().st_mtime == pytest.approx(hour_ago, abs=1)
    os.utime(path / "old", (day_ago, day_ago))
    assert read_whole_at(fd, "old", 10) == b"a"  # without touch_after: left as it was
    assert (path / "old").stat().st_mtime == pytest.approx(day_ago, abs=1)


def test_a_write_replaces_the_file_with_mode_0600_and_leaves_no_temporary(
    directory: tuple[Path, int],
) -> None:
    path, fd = directory
    assert atomic_write_at(fd, "entry", b"first")
    assert atomic_write_at(fd, "entry", b"second, longer")
    assert (path / "entry").read_bytes() == b"second, longer"
    assert (path / "entry").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.iterdir()] == ["entry"]


def test_a_new_file_is_created_in_place_with_mode_0600(directory: tuple[Path, int]) -> None:
    path, fd = directory
    assert create_at(fd, "entry", b"cached")
    assert (path / "entry").read_bytes() == b"cached"
    assert (path / "entry").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.iterdir()] == ["entry"]


@pytest.mark.parametrize("planted", ["file", "link"])
def test_creating_over_a_taken_name_replaces_it_whole_and_never_writes_through_a_link(
    directory: tuple[Path, int], planted: str
) -> None:
    """A name already taken (an entry half written by a render that crashed, or a link planted
    there) is replaced as atomic_write_at replaces it: the link itself, not its target."""
    path, fd = directory
    (path / "elsewhere").write_bytes(b"not the cache's")
    if planted == "link":
        (path / "entry").symlink_to(path / "elsewhere")
    else:
        (path / "entry").write_bytes(b'{"format": 3, "key": "half')
    assert create_at(fd, "entry", b"cached, whole")
    assert not (path / "entry").is_symlink() and (path / "entry").read_bytes() == b"cached, whole"
    assert (path / "elsewhere").read_bytes() == b"not the cache's"
    assert not [p for p in path.iterdir() if p.name.startswith(TEMPORARY_PREFIX)]


def test_a_write_replaces_a_planted_link_and_not_its_target(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "elsewhere").write_bytes(b"not the cache's")
    (path / "entry").symlink_to(path / "elsewhere")
    assert atomic_write_at(fd, "entry", b"cached")
    assert not (path / "entry").is_symlink() and (path / "entry").read_bytes() == b"cached"
    assert (path / "elsewhere").read_bytes() == b"not the cache's"


def test_a_write_that_cannot_be_renamed_fails_and_cleans_up(directory: tuple[Path, int]) -> None:
    path, fd = directory
    (path / "entry").mkdir()
    (path / "entry" / "inside").write_bytes(b"x")  # a file may not replace a non-empty directory
    assert atomic_write_at(fd, "entry", b"data") is False
    assert not [p for p in path.iterdir() if p.name.startswith(TEMPORARY_PREFIX)]
    assert (path / "entry" / "inside").read_bytes() == b"x"


def test_a_reader_never_sees_part_of_a_write(directory: tuple[Path, int]) -> None:
    _, fd = directory
    payloads = [bytes([65 + i]) * (1 << 20) for i in range(2)]
    assert atomic_write_at(fd, "entry", payloads[0])
    stop = threading.Event()

    def write() -> None:
        index = 0
        while not stop.is_set():
            index ^= 1
            assert atomic_write_at(fd, "entry", payloads[index])

    writer = threading.Thread(target=write)
    writer.start()
    try:
        seen = {read_whole_at(fd, "entry", 2 << 20) for _ in range(200)}
    finally:
        stop.set()
        writer.join()
    assert seen <= set(payloads) and seen


def test_subdirectories_are_made_private_and_links_refused(directory: tuple[Path, int]) -> None:
    path, fd = directory
    made = open_subdirectory(fd, "packs", create=True)
    assert made is not None
    os.close(made)
    assert (path / "packs").stat().st_mode & 0o777 == 0o700
    again = open_subdirectory(fd, "packs", create=True)  # already there: opened
    assert again is not None
    os.close(again)
    (path / "elsewhere").mkdir()
    (path / "linked").symlink_to(path / "elsewhere")
    (path / "file").write_bytes(b"")
    assert open_subdirectory(fd, "linked", create=True) is None
    assert open_subdirectory(fd, "file", create=False) is None
    assert open_subdirectory(fd, "absent", create=False) is None
    assert not (path / "absent").exists()


def test_a_directory_is_made_with_its_parents_only_when_asked(tmp_path: Path) -> None:
    assert open_directory(tmp_path / "a" / "b", create=False) is None
    fd = open_directory(tmp_path / "a" / "b", create=True)
    assert fd is not None
    os.close(fd)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert open_directory(tmp_path / "link", create=False) is None
