"""An app as the render pack keeps it (io.packed_app): the compact form round-trips, and an app
whose key, file name or text holds a NUL (which the form joins them with) is not packed."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.io.git_blobs import blob_id
from btp_gitops.generator.io.packed_app import (
    AppFiles,
    PackDamaged,
    PackedApp,
    _joined_file_names,
    _joined_subdomains,
    blob_ids_hold,
    origins_text,
    subdomains,
)

FILES = {
    "captenant-acme.yaml": "kind: CAPTenant\nname: é\n",  # not ASCII: spans are in bytes, texts in characters
    "kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "- captenant-acme.yaml\n- empty.yaml\n"
    ),
    "empty.yaml": "",
}
KEYS = ["11:sme.sap.com9:CAPTenant8:bookshopacme"]


def _ids(files: dict[str, str]) -> dict[str, str]:
    return {name: blob_id(text.encode()) for name, text in files.items()}


def _read_back(made: AppFiles) -> AppFiles:
    """The app as a render reading the pack gets it: the index's strings and the texts' span."""
    data = b"head" + made.texts_bytes() + b"tail"
    return AppFiles(made.keys_text, made.names_text, made.ids_text, memoryview(data), (4, len(data) - 4))


def test_an_app_reads_back_as_it_was_packed() -> None:
    made = AppFiles.rendered(KEYS, dict(FILES), _ids(FILES))
    assert made is not None
    read = _read_back(made)
    assert (read.keys(), read.files(), dict(zip(read.files(), read.ids(), strict=True)), read.ids()) == (
        KEYS,
        FILES,
        _ids(FILES),
        list(_ids(FILES).values()),
    )
    assert read.files() is read.files()  # decoded once: every caller gets the same strings
    app = PackedApp("cap-tenant.bookshop.acme", None, [], read, None, "")
    copy = app.regrouped("bookshop.bookshop")
    assert copy.files["empty.yaml"] is app.files["empty.yaml"]
    directory = app_directory("cap-tenant.bookshop.acme", "bookshop.bookshop")
    assert list(copy.paths_texts_ids()) == [(f"{directory}/{n}", t, _ids(FILES)[n]) for n, t in FILES.items()]
    assert copy.paths() is copy.paths() and app.paths()[0] == "cap-tenant.bookshop.acme/captenant-acme.yaml"


def test_an_app_without_files_or_keys_reads_back_empty() -> None:
    made = AppFiles.rendered([], {}, {})
    assert made is not None
    read = _read_back(made)
    assert (read.keys(), read.files(), dict(zip(read.files(), read.ids(), strict=True)), read.count()) == (
        [],
        {},
        {},
        0,
    )


@pytest.mark.parametrize(
    ("keys", "files"),
    [
        (["a\0b"], FILES),
        (KEYS, {**FILES, "x\0y.yaml": "text\n"}),
        (KEYS, {**FILES, "nul.yaml": "a\0b\n"}),
    ],
    ids=["key", "name", "text"],
)
def test_an_app_holding_a_nul_is_not_packed(keys: list[str], files: dict[str, str]) -> None:
    assert AppFiles.rendered(keys, dict(files), _ids(files)) is None


def test_texts_at_odds_with_the_names_fail_naming_the_app() -> None:
    made = AppFiles.rendered(KEYS, dict(FILES), _ids(FILES))
    assert made is not None
    data = made.texts_bytes() + b"\0extra\n"
    lying = AppFiles(made.keys_text, made.names_text, made.ids_text, data, (0, len(data)))
    app = PackedApp("cap-tenant.bookshop.acme", None, [], lying, None, b"", (0, 0))
    with pytest.raises(
        PackDamaged, match=re.escape("texts of app cap-tenant.bookshop.acme that are not as many")
    ):
        _ = app.files


OBJECTS = {
    "configmap-b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: shop\ndata:\n  'on': 'yes'\n",
    "kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
        "- configmap-b.yaml\n- job-a.yaml\n"
    ),
    "job-a.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\n  namespace: shop\nspec: {}\n",
}
OBJECT_KEYS = ["5:batch3:Job4:shopa", "0:9:ConfigMap4:shopb"]  # the render's order, not the files'


def _app(origins: str, keys: list[str] = OBJECT_KEYS, files: dict[str, str] = OBJECTS) -> PackedApp:
    made = AppFiles.rendered(keys, dict(files), _ids(files))
    assert made is not None
    return PackedApp("cap-tenant.shop.a", None, [], _read_back(made), None, origins)


def test_an_apps_objects_read_back_from_its_files_in_the_order_of_its_keys() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "a", "namespace": "shop"},
        "spec": {},
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "b", "namespace": "shop"},
        "data": {"on": "yes"},
    }
    assert _app("tenants/a.yaml#1").objects_payload() == [
        (job, "tenants/a.yaml#1"),
        (configmap, "tenants/a.yaml#1"),
    ]
    assert _app("x.yaml#1\0y.yaml#2").objects_payload() == [(job, "x.yaml#1"), (configmap, "y.yaml#2")]
    assert _app("", [], {}).objects_payload() == []


@pytest.mark.parametrize(
    ("origins", "keys", "files", "damage"),
    [
        ("a\0b\0c", OBJECT_KEYS, OBJECTS, "origins of app .* are not as many as its objects"),
        ("o", OBJECT_KEYS[:1], OBJECTS, "files of app .* do not hold the objects its index names"),
        ("o", [*OBJECT_KEYS, OBJECT_KEYS[0]], OBJECTS, "files of app .* do not hold the objects"),
        (
            "o",
            OBJECT_KEYS,
            {**OBJECTS, "job-a.yaml": OBJECTS["configmap-b.yaml"]},
            "files of app .* do not hold",
        ),
        (
            "o",
            OBJECT_KEYS,
            {**OBJECTS, "job-a.yaml": "kind: [\n"},
            "the file job-a.yaml of app .* does not hold",
        ),
        (
            "o",
            OBJECT_KEYS,
            {**OBJECTS, "job-a.yaml": "- a list\n"},
            "the file job-a.yaml of app .* does not hold",
        ),
        (
            "o",
            OBJECT_KEYS,
            {**OBJECTS, "job-a.yaml": "kind: Job\n"},
            "the file job-a.yaml of app .* does not hold",
        ),
    ],
    ids=["origins", "a-key-less", "a-key-twice", "an-object-twice", "not-yaml", "a-list", "no-name"],
)
def test_files_at_odds_with_the_keys_or_origins_fail_naming_the_app(
    origins: str, keys: list[str], files: dict[str, str], damage: str
) -> None:
    with pytest.raises(PackDamaged, match=f"render pack holds {damage}"):
        _app(origins, keys, files).objects_payload()


@pytest.mark.parametrize(
    ("origins", "kept"),
    [
        ([], ""),
        (["t/a.yaml#1"], "t/a.yaml#1"),
        (["t/a.yaml#1", "t/a.yaml#1", "t/a.yaml#1"], "t/a.yaml#1"),
        (["t/a.yaml#1", "chart/x.yaml", "t/a.yaml#1"], "t/a.yaml#1\0chart/x.yaml\0t/a.yaml#1"),
        (["t/a\0.yaml#1"], None),
    ],
)
def test_origins_are_kept_once_when_every_object_shares_one(origins: list[str], kept: str | None) -> None:
    assert origins_text(origins) == kept


# --- the checks of a pack's names and ids, in one pass over all 20,000 apps' ------------------------

# The forms, spelt out independently of the checks: names joined by NULs with one after the last.
SUBDOMAIN_LABELS = re.compile(r"(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\0)*")
FLAT_FILE_NAMES = re.compile(r"(?:[a-z0-9][-a-z0-9._]*\0)*")
# Names of the characters a form allows, short, so that its edges (a hyphen or dot first or last,
# two dots, an empty name) come up often; and text with characters it does not allow.
SUBDOMAIN_LIKE = st.text(alphabet="a9-.", max_size=5)
FILE_NAME_LIKE = st.text(alphabet="a9-._", max_size=5)
NEAR = st.text(alphabet="ab9-._\0/Aé ", max_size=12)


SUBDOMAIN_EDGES = [
    ["a-"],
    ["a", "-b"],
    ["a."],
    ["a", ".b"],
    ["a..b"],
    ["a.-b"],
    ["a-.b"],
    ["a", ""],
    ["a-b.c9"],
]
FILE_NAME_EDGES = [["a", "_b"], ["a", ".b"], ["a", "-b"], ["_a"], ["", "a"], ["a/b"], ["a_b.-c"]]


@given(st.lists(SUBDOMAIN_LIKE | NEAR, max_size=6))
@pytest.mark.parametrize("edge", SUBDOMAIN_EDGES)
def test_joined_subdomains_are_told_as_the_grammar_tells_them(edge: list[str], names: list[str]) -> None:
    for listed in (edge, names, [*names, *edge]):
        joined = "\0".join([*listed, ""])
        assert _joined_subdomains(joined) == (SUBDOMAIN_LABELS.fullmatch(joined) is not None), listed


@given(NEAR | st.text(alphabet="a9-._\0", max_size=12))
def test_a_joined_form_cut_anywhere_is_still_told_as_the_grammar_tells_it(text: str) -> None:
    assert _joined_subdomains(text) == (SUBDOMAIN_LABELS.fullmatch(text) is not None)
    assert _joined_file_names(text) == (FLAT_FILE_NAMES.fullmatch(text) is not None)


@given(st.lists(FILE_NAME_LIKE | NEAR, max_size=6))
@pytest.mark.parametrize("edge", FILE_NAME_EDGES)
def test_joined_file_names_are_told_as_the_grammar_tells_them(edge: list[str], names: list[str]) -> None:
    for listed in (edge, names, [*names, *edge]):
        joined = "\0".join([*listed, ""])
        assert _joined_file_names(joined) == (FLAT_FILE_NAMES.fullmatch(joined) is not None), listed


@given(st.text(alphabet="0123456789abcdefABCDEFg \n\0é", max_size=90))
def test_blob_ids_hold_only_lowercase_hexadecimal_digits(ids: str) -> None:
    app = AppFiles("", "", ids, b"", (0, 0))
    assert blob_ids_hold([app]) == (re.fullmatch("[0-9a-f]*", ids) is not None)


def test_the_names_a_render_writes_take_the_one_pass() -> None:
    """What a pack of tenant apps holds passes without falling back to name-by-name checks."""
    apps = [f"cap-tenant.bookshop.customer-{index:05d}" for index in range(3)] + ["bookshop.bookshop"]
    assert _joined_subdomains("\0".join([*apps, ""]))
    files = ["captenant-customer-00001.yaml", "dnsentry-shops-external-45106e1874.yaml", "kustomization.yaml"]
    assert _joined_file_names("\0".join([*files, ""]))
    assert subdomains(apps) and not subdomains(["-bad"]) and not subdomains(["a..b"])
