"""io.git_blobs.tree_id and CommitBlobs' trees: the id Git gives a directory, computed from file
names and blob ids alone, must be the one real Git writes (`git write-tree` of an index holding
the same files), or a `diff` would take an app for unchanged when it is not, or compare one it
could have left out. And leaving app directories out of a commit's files keeps every other file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btp_gitops.generator.io import git_blobs
from btp_gitops.generator.io.commit_tree import commit_blobs
from btp_gitops.generator.io.git_blobs import blob_id, flat_tree_id, flat_tree_ids, tree_id
from tests.unit.test_git_blobs import git

# Names whose order in a tree is not plain string order: Git orders a directory as if its name
# ended in a slash, so `a-b.yaml` ('-') and `a.yaml` ('.') come before the directory `a` ('/'),
# and `a0` ('0') after it.
LAYOUTS = {
    "flat": ["kustomization.yaml", "deployment-web.yaml", "service-web.yaml", "a-b.yaml", "a.yaml", "a0"],
    "stages": ["a-b.yaml", "a.yaml", "a/x.yaml", "a0", "10-crds/crd.yaml", "20-apps/deep/x.yaml", "z.yaml"],
    "one file": ["only.yaml"],
}


def written_tree(tmp_path: Path, files: dict[str, bytes]) -> str:
    """The tree id real Git gives a directory holding `files`."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for path, data in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    git(repo, "add", "-A")
    return git(repo, "write-tree").strip()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_tree_id_is_the_one_git_writes(tmp_path: Path, layout: str) -> None:
    files = {path: f"kind: ConfigMap\nname: {index}\n".encode() for index, path in enumerate(LAYOUTS[layout])}
    listed = [(path, blob_id(data)) for path, data in files.items()]
    assert tree_id(listed) == written_tree(tmp_path, files)
    assert tree_id(list(reversed(listed))) == tree_id(listed)  # the order given does not matter


def test_another_byte_or_name_is_another_tree(tmp_path: Path) -> None:
    files = {"a.yaml": b"one\n", "b.yaml": b"two\n"}
    base = tree_id([(path, blob_id(data)) for path, data in files.items()])
    assert base == written_tree(tmp_path, files)
    assert tree_id([("a.yaml", blob_id(b"one\n")), ("b.yaml", blob_id(b"two!\n"))]) != base
    assert tree_id([("a.yaml", blob_id(b"one\n")), ("c.yaml", blob_id(b"two\n"))]) != base
    assert tree_id([("a.yaml", blob_id(b"one\n"))]) != base


@pytest.mark.parametrize(
    "listed",
    [
        [("a.yaml", "0" * 40), ("a.yaml", "1" * 40)],  # a path twice
        [("a", "0" * 40), ("a/x.yaml", "1" * 40)],  # a file and a directory of one name
        [("a/x.yaml", "1" * 40), ("a", "0" * 40)],
        [("", "0" * 40)],
        [("../x.yaml", "0" * 40), ("y/z", "0" * 40)],
        [("a//x.yaml", "0" * 40)],
        [("a.yaml", "0" * 39)],  # not an id
        [("a\0b.yaml", "0" * 40)],
        [("a.yaml", "zz" * 20)],
        [("a.yaml", "00 " * 13 + "0")],  # fromhex skips spaces: 13 bytes, not 20
        [("d/a.yaml", "0" * 38)],
    ],
)
def test_paths_no_directory_holds_or_ids_no_blob_has_no_tree(listed: list[tuple[str, str]]) -> None:
    assert tree_id(listed) is None


def test_a_commit_lists_the_tree_of_every_directory(tmp_path: Path) -> None:
    files = {
        "kustomization.yaml": b"root\n",
        "tenants/g/3a/app-one/cm.yaml": b"one\n",
        "tenants/g/3a/app-one/kustomization.yaml": b"list one\n",
        "tenants/g/3a/app-one0/cm.yaml": b"one zero\n",
        "tenants/g/5c/app-two/cm.yaml": b"two\n",
        "flat/cm.yaml": b"flat\n",
        "flat/01-crds/crd.yaml": b"a stage directory\n",
        "flat/01-crds/deep/more.yaml": b"deeper still\n",
        "flat-other/cm.yaml": b"a namesake's prefix\n",
    }
    top = tmp_path / "repo"
    written_tree(tmp_path, files)
    git(top, "commit", "-qm", "rendered")
    head = git(top, "rev-parse", "HEAD^{tree}").strip()
    blobs = commit_blobs(top, head, "sha1", ("", "HEAD"))
    trees = blobs.known_tree_ids()
    assert set(trees) == {"tenants", "tenants/g", "tenants/g/3a", "tenants/g/5c", "flat", "flat-other"} | {
        "flat/01-crds",
        "flat/01-crds/deep",
        "tenants/g/3a/app-one",
        "tenants/g/3a/app-one0",
        "tenants/g/5c/app-two",
    }
    one = {path: blobs.blobs[path] for path in blobs if path.startswith("tenants/g/3a/app-one/")}
    assert trees["tenants/g/3a/app-one"] == tree_id([(p.rsplit("/", 1)[1], oid) for p, oid in one.items()])
    assert trees["tenants/g/3a/app-one"] == git(top, "rev-parse", "HEAD:tenants/g/3a/app-one").strip()

    # Leaving app directories out: exactly the files below them go, at any depth (not `app-one0/`
    # or `flat-other/`, whose names begin with the same letters), with their trees, the trees
    # below them and the trees above them.
    left = blobs.without_directories(["tenants/g/3a/app-one", "flat"])
    assert list(left) == [
        "flat-other/cm.yaml",
        "kustomization.yaml",
        "tenants/g/3a/app-one0/cm.yaml",
        "tenants/g/5c/app-two/cm.yaml",
    ]
    assert left["tenants/g/3a/app-one0/cm.yaml"] == b"one zero\n"
    assert set(left.known_tree_ids()) == {
        "flat-other",
        "tenants/g/3a/app-one0",
        "tenants/g/5c",
        "tenants/g/5c/app-two",
    }
    # A file left out the other way (`without`): the directories above it are no longer the trees.
    fewer = blobs.without(["tenants/g/5c/app-two/cm.yaml"])
    assert "tenants/g/5c/app-two" not in fewer.known_tree_ids() and "tenants" not in fewer.known_tree_ids()
    assert fewer.known_tree_ids()["tenants/g/3a/app-one"] == trees["tenants/g/3a/app-one"]


def test_ids_that_do_not_split_into_forty_digits_have_no_tree() -> None:
    """Two ids of 39 and 41 digits are 80 digits together, but not two blob ids."""
    assert tree_id([("a.yaml", "0" * 39), ("b.yaml", "1" * 41)]) is None
    assert tree_id([("a.yaml", "0" * 40), ("b.yaml", "1" * 40)]) is not None


def _joined(listed: list[tuple[str, str]]) -> tuple[str, str]:
    """A directory as the render pack keeps it: names joined by NULs, ids joined."""
    return "\0".join(name for name, _ in listed), "".join(oid for _, oid in listed)


def test_the_tree_ids_of_many_directories_are_the_ones_git_writes(tmp_path: Path) -> None:
    """`flat_tree_ids` answers for each directory what Git writes for it, in the order given."""
    apps = {
        "one": {"kustomization.yaml": b"list\n", "a-b.yaml": b"1\n", "a.yaml": b"2\n", "a0": b"3\n"},
        "two": {"z.yaml": b"last first\n", "b.yaml": b"b\n"},  # not in order: sorted as Git sorts
        "three": {"only.yaml": b"only\n"},
    }
    listings = [_joined([(name, blob_id(data)) for name, data in files.items()]) for files in apps.values()]
    found = flat_tree_ids(listings)
    for (name, files), tree in zip(apps.items(), found, strict=True):
        (tmp_path / name).mkdir()
        assert tree == written_tree(tmp_path / name, files)
    assert flat_tree_ids([]) == []
    assert flat_tree_ids([("", "")]) == [flat_tree_id([], "")]  # an empty directory: Git's empty tree


# Each a directory `flat_tree_id` finds no tree for, put between two well-formed ones: the batch
# must say None for it and still the right id for its neighbours (the ids of one must never be
# taken for another's, as ids that do not split into forty digits per name would be).
MALFORMED = [
    [("a.yaml", "0" * 40), ("a.yaml", "1" * 40)],  # a name twice
    [("a.yaml", "0" * 41)],  # more digits than one id
    [("a.yaml", "0" * 40), ("b.yaml", "1" * 39)],
    [("a.yaml", "zz" * 20)],
    [("a.yaml", "00 " * 13 + "0")],
    [(".", "0" * 40)],
    [("..", "0" * 40)],
    [("d/a.yaml", "0" * 40)],
    [("a.yaml", "0" * 40), ("", "1" * 40)],  # an empty name (two NULs)
]


@pytest.mark.parametrize("listed", MALFORMED)
def test_a_directory_without_a_tree_leaves_its_neighbours_theirs(listed: list[tuple[str, str]]) -> None:
    good = [("kustomization.yaml", blob_id(b"k\n")), ("cm.yaml", blob_id(b"c\n"))]
    other = [("x.yaml", blob_id(b"x\n"))]
    listings = [_joined(good), _joined(listed), _joined(other)]
    expected = [flat_tree_id(text.split("\0") if text else [], ids) for text, ids in listings]
    assert expected[0] is not None and expected[2] is not None
    assert expected[1] is None or "/" in listings[1][0]
    assert flat_tree_ids(listings) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.text(alphabet="ab.-_0/", min_size=0, max_size=4),
                st.sampled_from(["0" * 40, "a" * 40, "0" * 39, "A1" * 20, "g" * 40]),
            ),
            max_size=4,
        ),
        max_size=5,
    )
)
def test_many_directories_at_once_are_each_alone(directories: list[list[tuple[str, str]]]) -> None:
    """Whatever the names and ids (a NUL cannot be in a name: it joins them), the batch gives for
    each directory what `flat_tree_id` gives it alone."""
    listings = [_joined(listed) for listed in directories]
    alone = [flat_tree_id(text.split("\0") if text else [], ids) for text, ids in listings]
    assert flat_tree_ids(listings) == alone


def test_directories_in_gits_order_are_hashed_without_sorting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pack lists each app's names in Git's order: then no directory is sorted, even where one
    directory's last name comes after the next one's first (as `z.yaml` before `a.yaml` here), and
    the ids are still the ones Git writes. A directory that needs sorting is answered on its own."""
    apps = {
        "one": {"a.yaml": b"1\n", "kustomization.yaml": b"list\n", "z.yaml": b"3\n"},
        "two": {"a.yaml": b"other\n", "b.yaml": b"b\n"},
        "three": {},
        "four": {"only.yaml": b"only\n"},
    }
    listings = [_joined([(name, blob_id(data)) for name, data in files.items()]) for files in apps.values()]
    expected = []
    for name, files in apps.items():
        (tmp_path / name).mkdir()
        expected.append(written_tree(tmp_path / name, files))

    def no_sorting(*args: object) -> str | None:
        raise AssertionError("directories in Git's order were answered one by one")

    with monkeypatch.context() as patched:
        patched.setattr(git_blobs, "flat_tree_id", no_sorting)
        assert flat_tree_ids(listings) == expected
    out_of_order = [listings[0], _joined([("b.yaml", blob_id(b"b\n")), ("a.yaml", blob_id(b"other\n"))])]
    assert flat_tree_ids(out_of_order) == expected[:2]
