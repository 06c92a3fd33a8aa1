"""An app as the render pack keeps it (io.packed_app): the compact form round-trips, and an app
whose key, file name or text holds a NUL (which the form joins them with) is not packed."""

from __future__ import annotations

import re

import pytest

from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.io.git_blobs import blob_id
from btp_gitops.generator.io.packed_app import AppFiles, PackDamaged, PackedApp

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
    app = PackedApp("cap-tenant.bookshop.acme", None, [], read, None, b"", (0, 0))
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
