"""Fuzzing the state a render and a diff read back: forged write journals and ownership manifests.

Each example copies a rendered repository, forges one or both of:
- a journal beside the cluster directory: a random plan (either format; paths drawn from the
  tree's own, `..`, absolute, empty, huge and random ones; random digests), staged entries that
  are files, links to a directory or a file outside `--out` or to /proc/self, FIFOs and
  directories, and a seal that is missing, valid (the test session's key: as if made here),
  valid with a bit of the plan flipped, or random;
- the ownership manifest: random entries added (the same kinds of paths), lines dropped, bits
  flipped;
then runs `render` or `diff --against DIR` (text or markdown) on it in this process (the CLI's
  `main`). Whatever the forgery: no traceback and no exit 70; nothing outside `--out` changes (a
canary tree outside is hashed before and after) and its secret reaches no output (stdout,
stderr, the cluster directory; the repository's own README beside `clusters/` holds it too); a
file no manifest lists, planted in the cluster directory, keeps its bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from btp_gitops.generator.io.journal import digest_of
from btp_gitops.generator.io.journal_seal import journal_key, seal_text
from tests.conftest import EXAMPLES
from tests.support.fuzzing import (
    CANARY_SECRET,
    assert_clean_exit,
    assert_no_canary,
    files_under,
    run_in_process,
    snapshot,
)

CLUSTER = "c1"
CAP = EXAMPLES / "cap-app"
MANIFEST = ".btp-gitops-files"
FOREIGN = "NOTES.txt"
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, tuple[str, ...]]:
    """A rendered repository, and the paths of its cluster directory."""
    out = tmp_path_factory.mktemp("pristine") / "repo"
    run = run_in_process(["render", str(CAP), "--out", str(out), "--cluster", CLUSTER])
    assert run.code == 0, run.stderr
    root = out / "clusters" / CLUSTER
    return out, tuple(sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()))


def paths(known: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(known),
        st.sampled_from(
            (
                "../../outside/loot.yaml",
                "../outside",
                "/etc/passwd",
                "",
                ".",
                "a//b",
                "loot/loot.yaml",
                "proc/environ",
                "fifo/x",
                FOREIGN,
                "x" * 5000,
                "esc\x1b[2J.yaml",
            )
        ),
        st.text(max_size=20),
    )


# The escapes first: Hypothesis leans towards the first choices, and 40 examples must reach them.
STAGED_KINDS = ("link-dir-outside", "link-proc", "link-file-outside", "fifo", "file", "directory")


STAGED_NAMES = ("loot", "proc", "fifo")
ESCAPES = (
    ("loot", "link-dir-outside"),
    ("loot", "link-file-outside"),
    ("proc", "link-proc"),
    ("fifo", "fifo"),
)


@st.composite
def forged_journal(draw: st.DrawFn, known: tuple[str, ...]) -> dict[str, Any]:
    """One staged entry of a random kind (an escape, usually) that the plan writes on or through,
    more staged entries, and remove and prune lists; half the plans hold only plain paths (the
    parser takes them, so the checks behind it run), and most are sealed with this session's key
    (as if made here, or as if the key had leaked)."""
    name, kind = draw(
        st.sampled_from(ESCAPES) | st.tuples(st.sampled_from(known), st.sampled_from(STAGED_KINDS))
    )
    staged = [
        (name, kind),
        *draw(
            st.lists(
                st.tuples(
                    st.sampled_from(STAGED_NAMES) | st.sampled_from(known), st.sampled_from(STAGED_KINDS)
                ),
                max_size=2,
            )
        ),
    ]
    through = {"link-dir-outside": f"{name}/loot.yaml", "link-proc": f"{name}/environ"}.get(kind, name)
    plain = draw(st.booleans())
    escapes = st.sampled_from((FOREIGN, "loot/loot.yaml", "proc/environ", "fifo"))
    pick = escapes | st.sampled_from(known) if plain else escapes | paths(known)
    writes = draw(st.permutations([through, *draw(st.lists(pick, max_size=2))]))
    return {
        "format": 2 if plain else draw(st.sampled_from((2, 1, 3, "2"))),
        "write": writes,
        "remove": draw(st.lists(st.just(FOREIGN) | pick, max_size=3)),
        "prune": draw(st.lists(st.sampled_from(("loot", "tenants")) if plain else paths(known), max_size=2)),
        "digests": draw(
            st.just("right")
            | st.just("right")
            | st.lists(st.sampled_from(("0" * 64, "zz", digest_of(b""))), max_size=4)
        ),
        "staged": staged,
        "seal": draw(st.sampled_from(("valid", "valid", "valid", "none", "flipped-plan", "random"))),
        "flip": draw(st.integers(min_value=0, max_value=10_000)),
    }


@st.composite
def forged_manifest(draw: st.DrawFn, known: tuple[str, ...]) -> dict[str, Any]:
    return {
        "add": draw(st.lists(paths(known), max_size=3)),
        "drop": draw(st.integers(min_value=0, max_value=2)),
        "flip": draw(st.none() | st.integers(min_value=0, max_value=100_000)),
    }


def _stage(new: Path, relative: str, kind: str, outside: Path) -> None:
    if not relative or relative.startswith("/") or ".." in relative.split("/"):
        return
    target = new / relative
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(target):
            return
        if kind == "file":
            target.write_bytes(b"kind: ConfigMap\n")
        elif kind == "link-dir-outside":
            target.symlink_to(outside)
        elif kind == "link-file-outside":
            target.symlink_to(outside / "loot.yaml")
        elif kind == "link-proc":
            target.symlink_to("/proc/self")
        elif kind == "fifo":
            os.mkfifo(target)
        else:
            target.mkdir()
    except (OSError, ValueError):  # a path the file system refuses: no such journal can exist
        return


def _flip(data: bytes, at: int) -> bytes:
    if not data:
        return data
    index = at % len(data)
    return data[:index] + bytes([data[index] ^ (1 << (at % 8))]) + data[index + 1 :]


def _staged_bytes(staged: Path | None) -> bytes:
    """The bytes staged at a path of the plan, b"" when none are: no regular file there, or a
    name the file system refuses (pathlib's is_file raises on a name over 255 bytes)."""
    try:
        if staged is not None and staged.is_file() and not staged.is_symlink():
            return staged.read_bytes()
    except OSError:
        pass
    return b""


def plant_journal(clusters: Path, journal: dict[str, Any], outside: Path) -> None:
    directory = clusters / f".{CLUSTER}.journal-fz"
    new = directory / "new"
    new.mkdir(parents=True)
    for relative, kind in journal["staged"]:
        _stage(new, relative, kind, outside)
    body = {key: journal[key] for key in ("format", "write", "remove", "prune")}
    if journal["digests"] == "right":
        digests = []
        for path in journal["write"]:
            staged = new / path if path and not path.startswith("/") else None
            digests.append(digest_of(_staged_bytes(staged)))
        body["digests"] = digests
    else:
        body["digests"] = journal["digests"]
    plan = json.dumps(body).encode()
    if journal["seal"] == "flipped-plan":
        sealed_plan, plan = plan, _flip(plan, journal["flip"])
    else:
        sealed_plan = plan
    (directory / "plan.json").write_bytes(plan)
    if journal["seal"] in ("valid", "flipped-plan"):
        key = journal_key(create=True)
        assert key is not None
        seal = seal_text(key, clusters / CLUSTER, directory.name, sealed_plan)
        (directory / "seal").write_text(seal)
    elif journal["seal"] == "random":
        (directory / "seal").write_bytes(os.urandom(journal["flip"] % 300))


def forge_manifest(root: Path, forged: dict[str, Any]) -> None:
    manifest = root / MANIFEST
    lines = manifest.read_text().splitlines(keepends=True)
    kept = lines[: len(lines) - forged["drop"]]
    text = "".join(kept) + "".join(f"{entry}\n" for entry in forged["add"])
    data = text.encode("utf-8", errors="surrogateescape")
    if forged["flip"] is not None:
        data = _flip(data, forged["flip"])
    manifest.write_bytes(data)


@FUZZ
@given(data=st.data())
def test_forged_journals_and_manifests_never_escape(
    pristine: tuple[Path, tuple[str, ...]], data: st.DataObject
) -> None:
    out_pristine, known = pristine
    journal = data.draw(st.none() | forged_journal(known), label="journal")
    manifest = data.draw(st.none() | st.none() | forged_manifest(known), label="manifest")
    foreign = data.draw(st.booleans(), label="foreign file")
    command = data.draw(st.sampled_from(("render", "render", "diff-text", "diff-markdown")), label="command")
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp)
        out = world / "repo"
        shutil.copytree(out_pristine, out, symlinks=True)
        outside = world / "outside"
        outside.mkdir()
        (outside / "loot.yaml").write_text(f"secret: {CANARY_SECRET}\n")
        (out / "README.md").write_text(f"the repo's own file {CANARY_SECRET}\n")
        clusters = out / "clusters"
        if foreign:
            (clusters / CLUSTER / FOREIGN).write_text("a person's file\n")
        if manifest is not None:
            forge_manifest(clusters / CLUSTER, manifest)
        if journal is not None:
            plant_journal(clusters, journal, outside)
        before = snapshot(world, skip=clusters)
        if command == "render":
            args = ["render", str(CAP), "--out", str(out), "--cluster", CLUSTER, "--lock-timeout", "5"]
        else:
            args = ["diff", str(CAP), "--against", str(out), "--cluster", CLUSTER]
            args += ["--output", command.removeprefix("diff-"), "--new-cluster"]
        run = run_in_process(args)
        assert_clean_exit(run)
        event(f"{command}: exit {run.code}")
        event(f"journal seal: {journal['seal'] if journal else 'no journal'}")
        assert snapshot(world, skip=clusters) == before, "a file outside the cluster directory changed"
        if foreign:
            assert (clusters / CLUSTER / FOREIGN).read_text() == "a person's file\n"
        assert_no_canary([run.stdout, run.stderr, *files_under(clusters / CLUSTER)])
