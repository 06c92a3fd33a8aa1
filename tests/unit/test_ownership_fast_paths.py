"""core.ownership's fast paths give what the straightforward rules give, on every input.

The manifests are built, read and the removal guard decided with bulk operations, because a
cluster directory of 20,000 tenants holds 80,000 files; each of them is held here against the
rule it stands in for: the manifests against a path-by-path build, the reading against the
line-by-line check (which also decides whenever the fast one cannot), the removal guard's bound
against counting every app.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from btp_gitops.generator.core import ownership
from btp_gitops.generator.core.errors import UnsafeOutput
from btp_gitops.generator.core.layout import app_directory, app_path, shard_of
from btp_gitops.generator.core.ownership import (
    MANIFEST_FILE,
    SHARDED_LAYOUT_LINE,
    counted_removal,
    manifest_files,
    object_counts,
    owned_files,
    parse_manifest,
    removal_refusal,
)

# -- the manifests ------------------------------------------------------------------------------


def _manifests_path_by_path(paths: list[str], sharded: bool) -> dict[str, str]:
    """The manifests, each path placed by its own reading of the layout and each text joined from
    its sorted relative paths: the rule manifest_files follows."""
    listings: dict[str, set[str]] = {"": set()}
    for path in paths:
        if path.rpartition("/")[2] == MANIFEST_FILE:
            continue
        where = app_path(path)
        directory = where.directory.rpartition("/")[0] if where.grouped else ""  # a tenant's shard
        listings.setdefault(directory, set()).add(path)
        while directory:  # a shard's manifest is listed by its group's, a group's by the top one
            parts = directory.split("/")
            parent = "/".join(parts[:-1]) if len(parts) > 2 else ""
            listings.setdefault(parent, set()).add(f"{directory}/{MANIFEST_FILE}")
            directory = parent
    texts = {}
    for directory, listed in listings.items():
        prefix = f"{directory}/" if directory else ""
        head = ownership._PART_HEAD if directory else ownership._MANIFEST_HEAD
        if not directory and sharded:
            head += SHARDED_LAYOUT_LINE
        texts[prefix + MANIFEST_FILE] = head + "".join(
            path.removeprefix(prefix) + "\n" for path in sorted(listed)
        )
    return dict(sorted(texts.items()))


_GROUPS = ["shop.shop", "hr.hr"]
_APPS = [
    "cap-tenant.shop.acme",
    "cap-tenant.shop.globex",
    "cap-tenant.hr.initech",
    "btp-operator",
    "a",
    "a-b",
]
_ACME_SHARD = f"tenants/shop.shop/{shard_of('cap-tenant.shop.acme')}"
_PIECES = ["kustomization.yaml", "deployment-x.yaml", "01-crds/crd-x.yaml", "01-crds/kustomization.yaml", "x"]


@st.composite
def _cluster_paths(draw: st.DrawFn) -> list[str]:
    """Paths of a cluster directory of either layout, both at once (a directory half moved), and
    the odd ones: files at the top, in dot directories, directly in a shard or group directory, in
    a directory that only looks like a shard, nested stage directories, manifests anywhere."""
    apps = draw(st.lists(st.sampled_from(_APPS), unique=True))
    paths = draw(
        st.lists(
            st.sampled_from(
                [
                    ".kyma-modules.json",
                    "kustomization.yaml",
                    ".wiring/kustomization.yaml",
                    ".wiring/applicationset.yaml",
                    MANIFEST_FILE,
                    "tenants/shop.shop/readme.yaml",
                    "tenants/shop.shop/0a/loose.yaml",
                    f"tenants/shop.shop/0a/{MANIFEST_FILE}",
                    "tenants/shop.shop/zz/t/x.yaml",
                    "tenants/shop.shop/0A/t/x.yaml",
                    "tenants/x.yaml",
                    f"a/{MANIFEST_FILE}",
                    f"{_ACME_SHARD}/aa-loose.yaml",  # in the shard of a tenant: before its files,
                    f"{_ACME_SHARD}/zz-loose.yaml",  # after them
                    f"{_ACME_SHARD}/{MANIFEST_FILE}",
                    f"{_ACME_SHARD}/cap-tenant.shop.acme/{MANIFEST_FILE}",
                    f"{_ACME_SHARD}/cap-tenant.shop.acme/01-crds/{MANIFEST_FILE}",
                    f"{_ACME_SHARD}/cap-tenant.shop.acme/a\n{_ACME_SHARD}/b",  # a line feed in a name
                    "# a comment",  # named as a comment line (the line reads as one)
                    f"{_ACME_SHARD}/# a comment",
                ]
            )
        )
    )
    for app in apps:
        grouped = app.startswith("cap-tenant.")
        directories = [app]
        if grouped:
            group = draw(st.sampled_from(_GROUPS))
            directories = draw(
                st.lists(st.sampled_from([app, app_directory(app, group)]), min_size=1, unique=True)
            )
        for directory in directories:
            pieces = draw(st.lists(st.sampled_from(_PIECES), min_size=1, unique=True))
            paths += [f"{directory}/{piece}" for piece in pieces]
    return draw(st.permutations(paths)) if draw(st.booleans()) else sorted(paths)


@settings(max_examples=400, deadline=None)
@given(_cluster_paths(), st.booleans())
def test_the_manifests_are_built_as_path_by_path(paths: list[str], sharded: bool) -> None:
    assert manifest_files(paths, sharded=sharded) == _manifests_path_by_path(paths, sharded)


def test_the_manifests_of_many_tenants_are_built_as_path_by_path() -> None:
    """Every shard in use (2,000 tenants), paths in a render's sorted order, given twice, and as a set."""
    paths = [".kyma-modules.json", "btp-operator/deployment.yaml", "kustomization.yaml"]
    for n in range(2_000):
        directory = app_directory(f"cap-tenant.shop.t{n}", "shop.shop")
        paths += [f"{directory}/captenant-t{n}.yaml", f"{directory}/kustomization.yaml"]
    expected = _manifests_path_by_path(paths, True)
    assert len(expected) == 1 + 1 + 256
    assert manifest_files(sorted(paths)) == expected
    assert manifest_files(paths + paths[::-1]) == expected
    assert manifest_files(set(paths)) == expected


# -- reading a manifest ---------------------------------------------------------------------------


def _read_line_by_line(text: str, prefix: str = "") -> set[str] | tuple[str, str]:
    """What the line-by-line check gives: the entries with `prefix`, or the refused line's place
    and problem."""
    try:
        return {prefix + entry for entry in ownership._parse_lines(text, "m")}
    except UnsafeOutput as refused:
        return refused.problems[0].file, refused.problems[0].message


def _read_by_whole_text_checks(text: str, prefix: str = "") -> set[str] | None:
    """The entries the whole-text checks read, with `prefix`; None when they leave the text to
    the line-by-line check."""
    common = ownership._common_form_lines(text, prefix)
    return None if common is None else set(common[0]) - common[1]


_LINE_PIECES = st.sampled_from(
    ["a", "b", "é", " ", "#", ".", "..", "/", "x" * 254, "y" * 256, "\x00", "\t", "\x7f", "\x9f", "\xa0"]
)
# Every line break str.splitlines knows, and the line feed most of the time.
_LINE_BREAKS = st.sampled_from(
    ["\n"] * 8 + ["\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
)


@st.composite
def _manifest_texts(draw: st.DrawFn) -> str:
    """Manifest texts: mostly lines of the common form (comments, blank lines, relative paths),
    with every kind of rule-breaking piece and line break mixed in now and then."""
    common = draw(st.booleans())  # of the common form, unless a piece happens to break it
    common_lines = [
        st.just(""),
        st.just("# Written by `btp-gitops render`: (tenants/<group>/<shard>/<app>)."),
        st.lists(st.sampled_from(["app", "x.yaml", ".wiring", "a b", "#", "..x", "n" * 255]), min_size=1).map(
            "/".join
        ),
    ]
    any_line = st.lists(_LINE_PIECES, max_size=8).map("".join)
    lines = draw(st.lists(st.one_of(*common_lines, *([] if common else [any_line])), max_size=8))
    text = ""
    for line in lines:
        text += line + ("\n" if common else draw(_LINE_BREAKS))
    return text if draw(st.booleans()) else text.rstrip("\n")


@settings(max_examples=2000, deadline=None)
@given(_manifest_texts(), st.sampled_from(["", "tenants/g/0a/"]))
def test_a_manifest_is_read_as_line_by_line(text: str, prefix: str) -> None:
    """The whole-text checks accept only texts the line-by-line check accepts, with the same
    entries; parse_manifest gives what the line-by-line check gives, refusals too."""
    expected = _read_line_by_line(text, prefix)
    fast = _read_by_whole_text_checks(text, prefix)
    event("read by the whole-text checks" if fast is not None else "read line by line")
    if fast is not None:
        assert fast == expected
    try:
        parsed: set[str] | tuple[str, str] = {prefix + entry for entry in parse_manifest(text, "m")}
    except UnsafeOutput as refused:
        parsed = refused.problems[0].file, refused.problems[0].message
    assert parsed == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from(["a", "b", "c", "", "# c"]), max_size=8),
    limit=st.integers(min_value=0, max_value=4),
)
def test_the_entry_limit_is_the_line_by_line_check_s(
    lines: list[str], limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most MAX_MANIFEST_ENTRIES entries: a line listing one more (or again, once the limit is
    reached) is refused, whichever check reads the text."""
    monkeypatch.setattr(ownership, "MAX_MANIFEST_ENTRIES", limit)
    text = "".join(f"{line}\n" for line in lines)
    expected = _read_line_by_line(text)
    fast = _read_by_whole_text_checks(text)
    assert fast is None or fast == expected
    try:
        assert parse_manifest(text, "m") == expected
    except UnsafeOutput as refused:
        assert (refused.problems[0].file, refused.problems[0].message) == expected


@pytest.mark.parametrize(
    ("text", "entries"),
    [
        ("a\rb\r\nc\n", {"a", "b", "c"}),  # carriage returns end lines as line feeds do
        ("a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\u2028h\u2029i", set("abcdefghi")),
        ("# a comment\u2028listed/after.yaml\n", {"listed/after.yaml"}),  # the comment ends at U+2028
        ("\n\n# c\n\na\n", {"a"}),
        ("a\na\n", {"a"}),
        ("caf\xe9/\xa0.yaml\n", {"caf\xe9/\xa0.yaml"}),  # not ASCII: read line by line, accepted
        ("a//b\n# http://example.org\n", None),  # an empty component
    ],
)
def test_the_lines_are_those_str_splitlines_finds(text: str, entries: set[str] | None) -> None:
    """Pinned: a manifest's lines are split as str.splitlines splits them (every Unicode line
    break, each of them no character an entry may hold), whichever check reads it."""
    if entries is None:
        with pytest.raises(UnsafeOutput):
            parse_manifest(text)
    else:
        assert parse_manifest(text) == entries


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("ok\n\rb/../c\n", 3, "not a plain relative path"),  # "\n\r" ends two lines
        ("ok\u2028/abs\n", 2, "an absolute path"),
        ("ok\ta\n", 1, "holds a control character"),
        ("ok\n\x80\n", 2, "holds a control character"),
        ("ok/\n", 1, "not a plain relative path"),
        ("./ok\n", 1, "not a plain relative path"),
        ("ok/.\n", 1, "not a plain relative path"),
        ("n" * 256 + "\n", 1, "a name longer than 255 characters"),
        ("/".join(["n" * 255] * 17) + "\n", 1, "longer than 4096 characters"),
    ],
)
def test_a_refused_line_is_named_by_its_number(text: str, line: int, problem: str) -> None:
    with pytest.raises(UnsafeOutput, match="manifest c1/m") as refused:
        parse_manifest(text, "c1/m")
    assert refused.value.problems[0].file == f"c1/m:{line}"
    assert refused.value.problems[0].message.startswith(problem)


def test_what_the_manifests_are_written_as_is_read_by_the_whole_text_checks() -> None:
    """The manifests a render writes are of the common form: their reading never falls back to
    one match per line (which costs three times as much at 80,000 lines)."""
    paths = [".kyma-modules.json", ".wiring/kustomization.yaml", "btp-operator/deployment.yaml"]
    for n in range(300):
        directory = app_directory(f"cap-tenant.shop.t{n}", "shop.shop")
        paths += [f"{directory}/captenant-t{n}.yaml", f"{directory}/kustomization.yaml"]
    for sharded in (True, False):
        for path, text in manifest_files(paths, sharded=sharded).items():
            prefix = path.removesuffix(MANIFEST_FILE)
            assert _read_by_whole_text_checks(text, prefix) == _read_line_by_line(text, prefix)


def test_owned_files_reads_a_manifest_either_way() -> None:
    """A shard manifest with a comment only the line-by-line check reads (not ASCII) owns the same
    files as the one written; a line break other than \\n in it splits lines as everywhere."""
    directory = app_directory("cap-tenant.shop.acme", "shop.shop")
    shard = directory.rpartition("/")[0]
    paths = [f"{directory}/kustomization.yaml", f"{directory}/captenant-acme.yaml", "kustomization.yaml"]
    manifests = manifest_files(paths)
    files = {**{path: b"" for path in paths}, **{path: text.encode() for path, text in manifests.items()}}
    assert owned_files(files, set()) == set(files)
    shard_manifest = f"{shard}/{MANIFEST_FILE}"
    files[shard_manifest] = b"# r\xc3\xa9sum\xc3\xa9\r\n" + files[shard_manifest].replace(b"\n", b"\r\n")
    assert _read_by_whole_text_checks(files[shard_manifest].decode(), f"{shard}/") is None
    assert owned_files(files, set()) == set(files)


def _owned_path_by_path(files: dict[str, bytes]) -> set[str] | tuple[str, str]:
    """What the manifests own, each listed path looked up by itself (or the refused line's place
    and problem): the rule owned_files follows."""
    owned: set[str] = set()
    pending = [MANIFEST_FILE]
    while pending:
        manifest = pending.pop()
        owned.add(manifest)
        directory = manifest.rpartition("/")[0]
        prefix = f"{directory}/" if directory else ""
        try:
            entries = ownership._parse_lines(files[manifest].decode("utf-8", errors="replace"), manifest)
        except UnsafeOutput as refused:
            return refused.problems[0].file, refused.problems[0].message
        for entry in entries:
            path = prefix + entry
            if path not in files or path in owned:
                continue
            if path.rpartition("/")[2] != MANIFEST_FILE:
                owned.add(path)
            elif "/" in entry:
                pending.append(path)
    return owned


_TAMPERING = st.sampled_from(
    [
        "",
        "\n",
        "# a comment\n",
        "kustomization.yaml\n",  # listed again, or a file of the directory not written
        "cap-tenant.shop.acme/kustomization.yaml\n",
        "elsewhere.yaml\n",  # no such file
        "0a/.btp-gitops-files\n",
        "tenants/shop.shop/.btp-gitops-files\n",
        ".btp-gitops-files\n",  # itself
    ]
)


@st.composite
def _written_trees(draw: st.DrawFn) -> dict[str, bytes]:
    """A cluster directory as a render left it (some files of it not listed: someone else's),
    its manifests sometimes missing, edited (a line more, line ends changed), or one of them
    refused (a path leading out)."""
    paths = draw(_cluster_paths())
    written = draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
    manifests = manifest_files(written, sharded=draw(st.booleans()))
    files = {path: b"" for path in paths}
    for path, text in manifests.items():
        if path != MANIFEST_FILE and draw(st.integers(0, 9)) == 0:
            continue  # not there
        edited = text + "".join(draw(st.lists(_TAMPERING, max_size=2)))
        if draw(st.integers(0, 9)) == 0:
            edited = edited.replace("\n", "\r\n")
        files[path] = edited.encode()
    if draw(st.integers(0, 9)) == 0:
        refused = draw(st.sampled_from(sorted(manifests)))
        if refused in files:
            files[refused] += b"../out.yaml\n"
    return files


@settings(max_examples=1000, deadline=None)
@given(_written_trees())
def test_the_manifests_own_what_looking_up_each_listed_path_finds(files: dict[str, bytes]) -> None:
    expected = _owned_path_by_path(files)
    event("refused" if isinstance(expected, tuple) else "read")
    try:
        owned: set[str] | tuple[str, str] = owned_files(files, set())
    except UnsafeOutput as refused:
        owned = refused.problems[0].file, refused.problems[0].message
    assert owned == expected


def _owned_or_refused(files: dict[str, bytes]) -> set[str] | tuple[str, str]:
    try:
        return owned_files(files, set())
    except UnsafeOutput as refused:
        return refused.problems[0].file, refused.problems[0].message


def _shard_tree() -> tuple[dict[str, bytes], str]:
    """A written cluster directory of 40 tenants, and one of its shard directories."""
    paths = ["kustomization.yaml"]
    for n in range(40):
        directory = app_directory(f"cap-tenant.shop.t{n}", "shop.shop")
        paths += [f"{directory}/captenant-t{n}.yaml", f"{directory}/kustomization.yaml"]
    files = {path: b"" for path in paths}
    files.update({path: text.encode() for path, text in manifest_files(paths).items()})
    return files, app_directory("cap-tenant.shop.t0", "shop.shop").rpartition("/")[0]


def test_a_shard_manifest_as_written_is_compared_with_its_files_at_once() -> None:
    files, _ = _shard_tree()
    ordered = sorted(files)
    for path in files:
        if path.count("/") == 3 and path.endswith(MANIFEST_FILE):
            prefix = path.removesuffix(MANIFEST_FILE)
            run = ownership._listed_run(files[path].decode(), prefix, ordered)
            assert run == sorted(p for p in files if p.startswith(prefix) and p != path)
    assert owned_files(files, set()) == set(files)


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("# note", "# note"),  # a comment line: lists nothing
        ("", ""),  # a blank line
        ("cap/a\n{shard}/cap/b", "cap/a\ncap/b"),  # one name with a line feed, two lines
        ("cap/\x01", "cap/\x01"),  # a control character: refused
        ("cap/" + "n" * 256, "cap/" + "n" * 256),  # too long a name: refused
        ("cap/../x", "cap/../x"),  # refused
        ("cap//x", "cap//x"),  # refused
        ("/x", "/x"),  # refused
    ],
)
def test_a_shard_manifest_matching_its_files_is_still_read_by_the_rules(name: str, line: str) -> None:
    """A file whose path joined with the others reads as the manifest's text, line for line, but
    which the manifest does not list (or may not): owned or refused as path by path."""
    files, shard = _shard_tree()
    manifest = f"{shard}/{MANIFEST_FILE}"
    text = files[manifest].decode()
    head, body = text[: len(ownership._PART_HEAD)], text[len(ownership._PART_HEAD) :]
    files[f"{shard}/{name.format(shard=shard)}"] = b""
    lines = sorted([*body.splitlines(), line])
    files[manifest] = (head + "".join(f"{entry}\n" for entry in lines)).encode()
    assert _owned_or_refused(files) == _owned_path_by_path(files)


# -- the removal guard ----------------------------------------------------------------------------


@st.composite
def _renders(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """A previous cluster directory and the next render's paths, drawn from one tree's paths:
    apps of their own and tenants of either layout (so tenants move), kustomizations, stage
    directories, records beside the apps, files in dot directories and odd places; sometimes
    the next render keeps most of the files, sometimes a few."""
    universe = sorted(set(draw(_cluster_paths())) | set(draw(_cluster_paths())))
    previous = draw(st.lists(st.sampled_from(universe), unique=True)) if universe else []
    if previous and draw(st.booleans()):  # most kept: where the bound decides
        gone = set(draw(st.lists(st.sampled_from(previous), max_size=3)))
        new = [path for path in previous if path not in gone]
        new += draw(st.lists(st.sampled_from(universe), max_size=3))
    else:
        new = draw(st.lists(st.sampled_from(universe))) if universe else []
    if previous and draw(st.integers(0, 9)) == 0:  # a path given twice
        previous.append(draw(st.sampled_from(previous)))
    return previous, new


@settings(max_examples=1000, deadline=None)
@given(_renders())
@example(render=(["a/x.yaml", "a/x.yaml", "a/y.yaml"], ["a/y.yaml"]))  # counted twice: 2 of 3 go
def test_the_removal_guard_decides_as_counting_every_app(render: tuple[list[str], list[str]]) -> None:
    previous, new = render
    expected = counted_removal(previous, new)
    gone = sum(object_counts(set(previous) - set(new)).values())
    held = sum(object_counts(set(previous)).values())
    event("refused" if expected is not None else "let through")
    event("within the bound" if 2 * gone <= held else "beyond the bound")
    assert removal_refusal(previous, new) == expected


def test_a_render_that_removes_a_few_object_files_counts_no_app(monkeypatch: pytest.MonkeyPatch) -> None:
    """20,000 tenants, one of them gone, another added, one object replaced: the bound settles it
    without counting the apps (counted_removal is not called), and so does a render removing
    nothing; removing most objects is still counted and refused."""
    previous = ["kustomization.yaml", ".wiring/kustomization.yaml"]
    for n in range(20_000):
        directory = app_directory(f"cap-tenant.shop.t{n}", "shop.shop")
        previous += [f"{directory}/kustomization.yaml", f"{directory}/captenant-t{n}.yaml"]
    new = [path for path in previous if "cap-tenant.shop.t7/" not in path]
    new += [f"{app_directory('cap-tenant.shop.new', 'shop.shop')}/captenant-new.yaml"]
    new = [path.replace("captenant-t8.", "captenant-t8-renamed.") for path in new]

    def counted(previous: object, new: object) -> None:
        raise AssertionError("counted every app")

    with monkeypatch.context() as patched:
        patched.setattr(ownership, "counted_removal", counted)
        assert removal_refusal(previous, new) is None
        assert removal_refusal(previous, previous) is None
        assert removal_refusal(dict.fromkeys(previous, ""), dict.fromkeys(new, "")) is None
    assert removal_refusal(previous, previous[: len(previous) // 3]) is not None
