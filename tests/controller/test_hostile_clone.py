"""The controller's clone holds what anyone who can push to the source repository put there, and Git
checks symbolic links out as links: records.index (its files read by records.parsed_files) and
records.editor (through controller.gitstore, against a real bare remote seeded with examples/cap-app)
never follow one, never open a FIFO, never read an oversized file, and never write through a link.

Covers: a committed link to a file outside the clone (a CAPTenant record naming a canary) is an
unreadable record naming the link, the canary never read; a FIFO and an oversized (sparse) file
made in the clone directly (Git cannot commit them) are unreadable records, the FIFO never
opened and the big file never read (Python's allocations stay far below its size); a committed
`tenants -> ../outside` link and a committed dangling link in a new record's place make a
subscribe fail with nothing written outside the clone. The subscription server and controller
processes facing the same trees: tests/controller/subscription/test_hostile_clone.py.
"""

from __future__ import annotations

import os
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.controller.errors import PermanentError, UnreadableSource
from btp_gitops.controller.gitstore import SourceRepo
from btp_gitops.controller.records import DocumentRef, SourceIndex, subscribe_tenant
from btp_gitops.controller.records.editor import edit_document, write_new_document
from btp_gitops.generator.domains.cap.tenants.model import CAP_TENANT
from btp_gitops.generator.io.input_files import MAX_FILE_BYTES
from tests.controller.test_tenant_records import (
    APP,
    NAMESPACE,
    NEW_NAME,
    NEW_RECORD,
    apply,
    index_of,
    remote,
    repo,
    run_git,
    subscription,
    text_at,
)

__all__ = ["remote", "repo"]  # the fixtures this module shares with test_tenant_records

CANARY = "canary-5d1f0c7e9b"
CANARY_RECORD = f"""\
apiVersion: sme.sap.com/v1alpha1
kind: CAPTenant
metadata:
  name: {CANARY}
  namespace: {NAMESPACE}
spec:
  capApplicationInstance: {APP}
  subDomain: {CANARY}
  tenantId: 7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928
"""


def push_links(remote: Path, work: Path, links: dict[str, str], *, remove: tuple[str, ...] = ()) -> None:
    """Commit symbolic links (path -> target, as `ln -s` writes them) to the remote's main branch,
    from a clone of its own; `remove`: paths taken out of the tree in the same commit."""
    clone = work / "pusher"
    run_git(work, "clone", "--quiet", str(remote), str(clone))
    for path in remove:
        run_git(clone, "rm", "-r", "--quiet", path)
    for path, target in links.items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, clone / path)
    run_git(clone, "add", "--all")
    run_git(clone, "commit", "--quiet", "-m", "links")
    run_git(clone, "push", "--quiet", "origin", "HEAD:refs/heads/main")


def outside(tmp_path: Path) -> Path:
    """A directory beside the clone (`tmp_path/work`): what a link in the clone may point at."""
    directory = tmp_path / "outside"
    directory.mkdir(exist_ok=True)
    return directory


def unreadable(repo: SourceRepo, prepare: Callable[[Path], Path]) -> str:
    """The UnreadableSource message of indexing the clone, after `prepare` made a file in it
    directly (Git cannot commit a FIFO), in a thread with a deadline: a reader that opens a FIFO
    blocks until someone opens it for writing, which the test does after the deadline."""
    outcome: list[BaseException | SourceIndex] = []
    made: list[Path] = []

    def index(tree: Path) -> None:
        made.append(prepare(tree))
        try:
            outcome.append(SourceIndex.of_tree(tree))
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=repo.read, args=(index,), kwargs={"refresh": False}, daemon=True)
    thread.start()
    thread.join(30)
    if thread.is_alive():
        os.close(os.open(made[0], os.O_WRONLY | os.O_NONBLOCK))  # the blocked reader gets an EOF
        thread.join(30)
        raise AssertionError("indexing the clone blocked on a FIFO")
    assert len(outcome) == 1 and isinstance(outcome[0], UnreadableSource), outcome
    return str(outcome[0])


def test_a_link_to_a_record_outside_the_clone_is_unreadable_and_never_read(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    (outside(tmp_path) / "record.yaml").write_text(CANARY_RECORD)
    push_links(remote, tmp_path, {"tenants/linked.yaml": "../../outside/record.yaml"})

    with pytest.raises(UnreadableSource) as refused:
        index_of(repo)

    message = str(refused.value)
    assert "tenants/linked.yaml: a symbolic link, which the controller never follows in its clone" in message
    assert CANARY not in message
    with pytest.raises(UnreadableSource, match=r"tenants/linked\.yaml: a symbolic link"):
        apply(repo, subscribe_tenant(subscription()))  # nothing is written beside it
    assert text_at(repo, NEW_RECORD) is None


def test_a_fifo_in_the_clone_is_an_unreadable_record_never_opened(repo: SourceRepo) -> None:
    def make_fifo(tree: Path) -> Path:
        os.mkfifo(tree / "tenants" / "pipe.yaml")
        return tree / "tenants" / "pipe.yaml"

    message = unreadable(repo, make_fifo)

    assert "tenants/pipe.yaml: not a regular file (a device, FIFO or socket)" in message


def test_an_oversized_file_in_the_clone_is_unreadable_and_never_read(repo: SourceRepo) -> None:
    def make_big_file(tree: Path) -> Path:
        with (tree / "tenants" / "big.yaml").open("wb") as file:
            file.truncate(MAX_FILE_BYTES + 1)  # sparse: costs no disk
        return tree / "tenants" / "big.yaml"

    tracemalloc.start()
    try:
        message = unreadable(repo, make_big_file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        f"tenants/big.yaml: too large ({MAX_FILE_BYTES + 1} bytes, the limit is {MAX_FILE_BYTES} bytes)"
        in message
    )
    assert peak < 8 << 20, f"indexing allocated {peak} bytes"


def test_a_committed_tenants_link_makes_a_subscribe_fail_and_writes_nothing_outside(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    target = outside(tmp_path)
    (target / "record.yaml").write_text(CANARY_RECORD)
    push_links(remote, tmp_path, {"tenants": "../outside"}, remove=("tenants",))

    assert index_of(repo).tenant_named(NAMESPACE, CANARY) is None  # a linked directory is not entered
    with pytest.raises(PermanentError) as refused:
        apply(repo, subscribe_tenant(subscription()))

    assert str(refused.value) == (
        f"cannot write {NEW_RECORD}: tenants: a symbolic link, which the controller never follows in its clone"
    )
    assert list(target.iterdir()) == [target / "record.yaml"]
    assert text_at(repo, NEW_RECORD) is None


def test_a_committed_dangling_link_in_a_new_records_place_writes_nothing_outside(
    repo: SourceRepo, remote: Path, tmp_path: Path
) -> None:
    target = outside(tmp_path)
    push_links(remote, tmp_path, {NEW_RECORD: "../../outside/planted.yaml"})

    with pytest.raises(UnreadableSource, match=rf"{NEW_NAME}\.yaml: a symbolic link"):
        apply(repo, subscribe_tenant(subscription()))

    assert list(target.iterdir()) == []


def test_the_writer_itself_never_writes_through_a_link(tmp_path: Path) -> None:
    """records.editor on its own (the index refuses these trees before any change reaches it):
    a new record never replaces a link in its place, dangling or not, nor goes through a linked
    directory; an edit never writes through a link swapped in for the file it read."""
    tree, target = tmp_path / "tree", outside(tmp_path)
    (tree / "tenants").mkdir(parents=True)
    (tree / "tenants" / "new.yaml").symlink_to("../../outside/planted.yaml")
    (tree / "linked").symlink_to("../outside")
    body = yaml.safe_load(CANARY_RECORD)

    with pytest.raises(PermanentError, match=r"^tenants/new\.yaml exists but holds no record of CAPTenant"):
        write_new_document(tree, Path("tenants/new.yaml"), body)
    with pytest.raises(UnreadableSource, match=r"^cannot write linked/new\.yaml: linked: a symbolic link"):
        write_new_document(tree, Path("linked/new.yaml"), body)
    with pytest.raises(UnreadableSource, match=r"^cannot write linked/deeper/new\.yaml: linked: a symbolic"):
        write_new_document(tree, Path("linked/deeper/new.yaml"), body)
    assert list(target.iterdir()) == []

    (tree / "tenants" / "real.yaml").write_text(CANARY_RECORD)
    (target / "victim.yaml").write_text("kept: as it was\n")

    def swap_for_a_link(document: dict[str, Any]) -> None:
        document["spec"]["subDomain"] = "changed"
        (tree / "tenants" / "real.yaml").unlink()
        (tree / "tenants" / "real.yaml").symlink_to("../../outside/victim.yaml")

    ref = DocumentRef(Path("tenants/real.yaml"), CAP_TENANT, NAMESPACE, CANARY)
    with pytest.raises(
        UnreadableSource, match=r"^cannot write tenants/real\.yaml: tenants/real\.yaml: a symbolic"
    ):
        edit_document(tree, ref, swap_for_a_link)
    assert (target / "victim.yaml").read_text() == "kept: as it was\n"
