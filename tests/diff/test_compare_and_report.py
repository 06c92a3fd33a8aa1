"""Comparing rendered trees (generator.diff.compare) and the three report formats
(generator.diff.report): added / changed / removed objects, moves, files without objects,
markdown size limits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from btp_gitops.generator.core.yamlio import dump_object
from btp_gitops.generator.diff.compare import ChangeKind, ClusterDiff, compare_trees
from btp_gitops.generator.diff.report import DiffTitle, json_report, markdown_report, printable, text_report

TITLE = DiffTitle("demo", "main (0123456789ab)")


def config_map(name: str, namespace: str = "ns", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def tree(objects: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {path: dump_object(obj) for path, obj in objects.items()}


OLD = tree(
    {
        "web/configmap-a.yaml": config_map("a", colour="blue"),
        "web/configmap-b.yaml": config_map("b", size="1"),
        "db/configmap-c.yaml": config_map("c"),
    }
)
NEW = tree(
    {
        "web/configmap-a.yaml": config_map("a", colour="green"),
        "web/configmap-d.yaml": config_map("d"),
        "db/configmap-c.yaml": config_map("c"),
    }
)


def test_added_changed_and_removed_objects_per_app() -> None:
    diff = compare_trees(OLD, NEW, prefix="clusters/demo/")

    assert [(c.app, c.kind, c.subject) for c in diff.changes] == [
        ("web", ChangeKind.ADDED, "ConfigMap ns/d"),
        ("web", ChangeKind.CHANGED, "ConfigMap ns/a"),
        ("web", ChangeKind.REMOVED, "ConfigMap ns/b"),
    ]
    added, changed, removed = diff.changes
    assert changed.diff == (
        "--- a/clusters/demo/web/configmap-a.yaml\n"
        "+++ b/clusters/demo/web/configmap-a.yaml\n"
        "@@ -4,4 +4,4 @@\n"
        "   name: a\n"
        "   namespace: ns\n"
        " data:\n"
        "-  colour: blue\n"
        "+  colour: green\n"
    )
    assert added.diff.startswith("--- /dev/null\n+++ b/clusters/demo/web/configmap-d.yaml\n")
    assert removed.diff.startswith("--- a/clusters/demo/web/configmap-b.yaml\n+++ /dev/null\n")
    assert [(s.app, s.added, s.changed, s.removed) for s in diff.apps()] == [("web", 1, 1, 1)]


def test_identical_trees_have_no_changes() -> None:
    assert compare_trees(OLD, dict(OLD)).empty


def test_objects_are_matched_by_identity_not_by_file() -> None:
    """A file renamed or split into stage directories is not an added and a removed object."""
    moved = {"web/10-resources/configmap-a.yaml": OLD["web/configmap-a.yaml"]}
    reformatted = {
        "web/configmap-a.yaml": "{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns}, data: {colour: blue}}\n"
    }

    [move] = compare_trees({"web/configmap-a.yaml": OLD["web/configmap-a.yaml"]}, moved).changes
    [reformat] = compare_trees({"web/configmap-a.yaml": OLD["web/configmap-a.yaml"]}, reformatted).changes

    assert (move.kind, move.old_path, move.new_path, move.diff) == (
        ChangeKind.CHANGED,
        "web/configmap-a.yaml",
        "web/10-resources/configmap-a.yaml",
        "",
    )
    assert move.note == "moved from web/configmap-a.yaml"
    assert (reformat.diff, reformat.note) == ("", "reformatted (same content)")


def test_an_object_in_another_app_is_removed_there_and_added_here() -> None:
    before = {"old-app/configmap-a.yaml": OLD["web/configmap-a.yaml"]}
    after = {"new-app/configmap-a.yaml": OLD["web/configmap-a.yaml"]}

    diff = compare_trees(before, after)

    assert [(c.app, c.kind) for c in diff.changes] == [
        ("new-app", ChangeKind.ADDED),
        ("old-app", ChangeKind.REMOVED),
    ]


def test_files_without_objects_are_compared_by_path() -> None:
    before = {
        ".kyma-modules.json": '{"modules": ["a"]}\n',
        "web/kustomization.yaml": "resources:\n- a.yaml\n",
    }
    after = {
        ".kyma-modules.json": '{"modules": ["a", "b"]}\n',
        "web/kustomization.yaml": "resources:\n- a.yaml\n",
    }

    [record] = compare_trees(before, after).changes

    assert (record.app, record.subject, record.kind) == ("", ".kyma-modules.json", ChangeKind.CHANGED)
    assert '+{"modules": ["a", "b"]}\n' in record.diff


def test_a_multi_document_file_is_compared_object_by_object() -> None:
    before = {"web/all.yaml": "---\n" + dump_object(config_map("a")) + "---\n" + dump_object(config_map("b"))}
    after = {
        "web/all.yaml": "---\n" + dump_object(config_map("a")) + "---\n" + dump_object(config_map("b", x="1"))
    }

    [change] = compare_trees(before, after).changes

    assert change.subject == "ConfigMap ns/b"
    assert "+  x: '1'" in change.diff


# --- reports ---------------------------------------------------------------------------------


def test_text_report_lists_changes_per_app_then_the_diffs() -> None:
    diff = compare_trees(OLD, NEW, prefix="clusters/demo/")

    text = text_report(diff, TITLE)

    assert text.startswith(
        "btp-gitops diff: clusters/demo against main (0123456789ab): 1 added, 1 changed, 1 removed in 1 app\n"
        "\n"
        "web: 1 added, 1 changed, 1 removed\n"
        "  + ConfigMap ns/d\n"
        "  ~ ConfigMap ns/a\n"
        "  - ConfigMap ns/b\n"
        "\n"
        "--- /dev/null\n"
    )
    assert text.endswith("-  size: '1'\n")


def test_reports_of_no_change() -> None:
    empty = ClusterDiff(())
    assert (
        text_report(empty, TITLE)
        == "btp-gitops diff: clusters/demo against main (0123456789ab): no changes\n"
    )
    assert markdown_report(empty, TITLE).endswith("No changes.\n")
    assert json_report(empty, TITLE)["changed"] is False


def test_markdown_report_has_a_table_and_a_diff_block_per_change() -> None:
    markdown = markdown_report(compare_trees(OLD, NEW), TITLE)

    assert markdown.startswith(
        "### btp-gitops diff: `clusters/demo` against `main (0123456789ab)`\n\n"
        "**1 added, 1 changed, 1 removed in 1 app**\n\n"
        "| App | Added | Changed | Removed |\n|---|---:|---:|---:|\n| `web` | 1 | 1 | 1 |\n"
    )
    assert markdown.count("<details><summary>") == 3
    assert "<code>web</code>: ~ ConfigMap ns/a</summary>\n\n```diff\n" in markdown
    assert "Truncated" not in markdown


def big_diff(changes: int) -> ClusterDiff:
    old = {
        f"app/configmap-{n}.yaml": dump_object(config_map(f"c{n}", value="x" * 200)) for n in range(changes)
    }
    new = {
        f"app/configmap-{n}.yaml": dump_object(config_map(f"c{n}", value="y" * 200)) for n in range(changes)
    }
    return compare_trees(old, new)


@pytest.mark.parametrize("limit", [1_000, 2_500, 10_000])
def test_markdown_is_cut_between_blocks_with_a_note(limit: int) -> None:
    diff = big_diff(40)

    markdown = markdown_report(diff, TITLE, max_length=limit)

    assert len(markdown) <= limit
    shown = markdown.count("```diff\n")
    assert markdown.count("</details>") == shown  # no block cut in half
    assert shown < 40
    assert markdown.endswith(
        f"> [!NOTE]\n> Truncated to {limit:,} characters: the diffs of {shown} of 40 changes are shown. "
        "Run `btp-gitops diff` locally for all of them.\n"
    )


def test_markdown_fits_exactly_without_a_note() -> None:
    diff = big_diff(3)
    full = markdown_report(diff, TITLE, max_length=1_000_000)

    assert markdown_report(diff, TITLE, max_length=len(full)) == full
    assert "Truncated" in markdown_report(diff, TITLE, max_length=len(full) - 1)


def test_a_diff_with_backticks_gets_a_longer_fence() -> None:
    old = {"app/configmap-a.yaml": dump_object(config_map("a", script="echo ```"))}
    new = {"app/configmap-a.yaml": dump_object(config_map("a", script="echo ````"))}

    markdown = markdown_report(compare_trees(old, new), TITLE)

    assert "`````diff\n" in markdown and markdown.count("`````\n") == 1


def test_json_report_is_complete() -> None:
    report = json_report(compare_trees(OLD, NEW, prefix="clusters/demo/"), TITLE)

    json.dumps(report)  # serialisable as it is
    assert report["summary"] == {"added": 1, "changed": 1, "removed": 1}
    assert report["apps"] == [{"app": "web", "added": 1, "changed": 1, "removed": 1}]
    assert [(c["change"], c["subject"], c["oldPath"], c["newPath"]) for c in report["changes"]] == [
        ("added", "ConfigMap ns/d", None, "web/configmap-d.yaml"),
        ("changed", "ConfigMap ns/a", "web/configmap-a.yaml", "web/configmap-a.yaml"),
        ("removed", "ConfigMap ns/b", "web/configmap-b.yaml", None),
    ]


def test_text_and_markdown_escape_every_control_character_but_line_breaks_and_tabs() -> None:
    shown = "clear\x1b[2J bell\x07 csi\x9b2J nul\x00 del\x7f sep\u2028 rtl\u202e tab\tend"
    assert printable(shown) == (
        "clear\\x1b[2J bell\\x07 csi\\x9b2J nul\\x00 del\\x7f sep\\u2028 rtl\\u202e tab\tend"
    )
    before = {"x\x1b]0;t\x07.txt": f"{shown}\n"}
    diff = compare_trees(before, {}, prefix="clusters/demo/")
    title = DiffTitle("demo", "main (0123456789ab)", (f"module {shown}",))
    for report in (text_report(diff, title), markdown_report(diff, title, 2_000)):
        assert printable(report) == report  # nothing left to escape
        assert "x\\x1b]0;t\\x07.txt" in report and "\\u202e" in report
    assert json_report(diff, title)["changes"][0]["oldPath"] == "x\x1b]0;t\x07.txt"  # exact
