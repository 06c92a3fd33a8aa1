"""import_kyma: Lifecycle Manager's live objects -> kyma/kyma.yaml and kyma/catalog/<module>.yaml."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.migration import ImportResult, LiveObject, import_kyma, merge_results
from tests.conftest import RunCli
from tests.migration.lifecycle_manager_objects import (
    ORIGIN,
    RELEASES,
    changed,
    kyma,
    runtime_objects,
    template,
)
from tests.migration.result_files import accounted_for, serialized, write_result


def _file(result: ImportResult, path: str) -> list[dict[str, Any]]:
    imported = next(f for f in result.files if f.path == path)
    return [dict(document.body) for document in imported.documents]


def _comment(result: ImportResult, path: str, index: int = 0) -> str:
    imported = next(f for f in result.files if f.path == path)
    return "\n".join(imported.documents[index].comment)


def _reasons(result: ImportResult, described: str) -> list[str]:
    return [s.reason for s in result.skipped if s.object == described]


def _actions(result: ImportResult, described: str) -> list[str]:
    return [f.action for f in result.follow_ups if f.object == described]


def test_the_runtime_is_imported_in_the_layout_of_the_kyma_modules_example() -> None:
    result = import_kyma(runtime_objects())
    assert [f.path for f in result.files] == [
        "kyma/catalog/auditlog.yaml",
        "kyma/catalog/greeter.yaml",
        "kyma/catalog/relay.yaml",
        "kyma/kyma.yaml",
    ]
    [imported_kyma] = _file(result, "kyma/kyma.yaml")
    assert imported_kyma == {
        "apiVersion": "operator.kyma-project.io/v1beta2",
        "kind": "Kyma",
        "metadata": {
            "name": "default",
            "namespace": "kyma-system",
            # The broker's labels stay (a restricted module's kymaSelector may match them); the
            # operator's own labels, annotation, finalizer and the server's fields do not.
            "labels": {
                "kyma-project.io/global-account-id": "1a2b3c4d-0000-4000-8000-00000000feed",
                "kyma-project.io/region": "europe-west3",
            },
            "annotations": {"skr-domain": "c-7c0f7f5.kyma.example.com"},
        },
        "spec": {
            "channel": "regular",
            "modules": [{"name": "greeter"}, {"name": "relay", "channel": "fast"}],
        },
    }
    kinds = [(d["kind"], d["metadata"]["name"]) for d in _file(result, "kyma/catalog/greeter.yaml")]
    assert kinds == [
        ("ModuleReleaseMeta", "greeter"),
        ("ModuleTemplate", "greeter-1.0.0"),
        ("ModuleTemplate", "greeter-1.1.0"),
    ]


def test_what_lifecycle_manager_set_is_left_out_and_said_so() -> None:
    result = import_kyma(runtime_objects())
    comment = _comment(result, "kyma/kyma.yaml")
    for left_out in (
        "metadata.labels.operator.kyma-project.io/kyma-name",
        "metadata.annotations.operator.kyma-project.io/owned-by",
        "metadata.finalizers (operator.kyma-project.io/Kyma)",
        "status",
    ):
        assert left_out in comment
    meta, template_doc = _file(result, "kyma/catalog/auditlog.yaml")
    assert "finalizers" not in meta["metadata"]
    assert "metadata.finalizers (operator.kyma-project.io/mandatory-module)" in _comment(
        result, "kyma/catalog/auditlog.yaml"
    )
    assert template_doc["metadata"]["labels"] == {"operator.kyma-project.io/module-name": "auditlog"}
    for document in (d for f in result.files for d in f.documents):
        assert not {"uid", "resourceVersion", "managedFields", "generation"} & set(document.body["metadata"])
        assert "status" not in document.body


def test_the_status_lifecycle_manager_reported_is_stated_and_a_downgrade_is_warned_of() -> None:
    objects = runtime_objects()
    # greeter runs 1.1.0 (the Kyma once asked for fast); the catalog's regular channel gives 1.0.0.
    objects[0] = changed(objects[0], ("status", "modules", 0, "version"), "1.1.0")
    comment = _comment(import_kyma(objects), "kyma/kyma.yaml")
    assert "Lifecycle Manager's status (not a source; the render keeps its own record): Ready." in comment
    assert "  greeter: 1.1.0, channel regular, Ready" in comment
    assert (
        "Warning: greeter is installed at 1.1.0; the first render installs 1.0.0 "
        "(a downgrade: set version: 1.1.0 on its entry to keep it)."
    ) in comment
    # relay runs what its channel resolves: nothing to warn of.
    assert "relay is installed" not in comment


def test_every_template_lists_the_raw_manifest_to_fetch_and_points_at_where_it_goes() -> None:
    result = import_kyma(runtime_objects())
    documents = _file(result, "kyma/catalog/relay.yaml")
    assert documents[1]["spec"]["rawManifest"] == {"path": "../.modules/relay/0.2.0"}
    assert documents[1]["spec"]["resources"] == [
        {"name": "rawManifest", "link": RELEASES.format(module="relay", version="0.2.0")}
    ]
    # Imported, not skipped: the fetch is a step left to the user before the first render.
    assert _reasons(result, "ModuleTemplate kyma-system/relay-0.3.0") == []
    assert _actions(result, "ModuleTemplate kyma-system/relay-0.3.0") == [
        "its raw manifest is not in the cluster: fetch it from "
        f"{RELEASES.format(module='relay', version='0.3.0')} into kyma/.modules/relay/0.3.0/ before "
        "rendering (the template is imported, spec.rawManifest.path points there)"
    ]
    # Without a link, the OCM component names where Lifecycle Manager pulled it from.
    bare = changed(LiveObject(template("relay", "0.3.0"), ORIGIN), ("spec", "resources"), ...)
    [action] = _actions(import_kyma([bare]), "ModuleTemplate kyma-system/relay-0.3.0")
    assert "raw-manifest resource of OCM component kyma-project.io/module/relay:0.3.0" in action
    assert "europe-docker.pkg.dev/example/modules" in action


def test_any_input_order_gives_the_same_result_and_a_copy_read_twice_is_imported_once() -> None:
    objects = runtime_objects()
    expected = import_kyma(objects)
    shuffled = list(objects)
    for seed in range(5):
        random.Random(seed).shuffle(shuffled)
        assert import_kyma(shuffled) == expected
    assert import_kyma([*objects, *reversed(objects)]) == expected
    # The same object from two dumps that disagree: neither copy wins by being read first.
    other = changed(objects[2], ("spec", "data", "spec", "replicas"), 3)
    other = LiveObject(other.body, "dumps/b.yaml: document 1")
    result = import_kyma([objects[2], other])
    assert result == import_kyma([other, objects[2]])
    assert result.files == ()
    assert len(_reasons(result, "ModuleTemplate kyma-system/greeter-1.0.0")) == 2


def test_one_kyma_per_cluster_the_runtimes_when_several_are_read() -> None:
    second = changed(LiveObject(kyma(), "cluster"), ("metadata", "name"), "spare")
    result = import_kyma([*runtime_objects(), second])
    assert _file(result, "kyma/kyma.yaml")[0]["metadata"]["name"] == "default"
    assert _reasons(result, "Kyma kyma-system/spare") == [
        "a cluster has one Kyma and kyma-system/default is the runtime's; this one is not imported"
    ]
    third = changed(second, ("metadata", "name"), "other")
    result = import_kyma([second, third])
    assert [f.path for f in result.files] == []
    assert {s.object for s in result.skipped} == {"Kyma kyma-system/spare", "Kyma kyma-system/other"}


BAD_INPUT = [
    # (object index in runtime_objects(), path, value, skipped object, words of the reason)
    (0, ("spec", "modules"), {"name": "greeter"}, "Kyma kyma-system/default", "spec.modules: must be a list"),
    (0, ("spec", "modules", 1, "channel"), 7, "Kyma kyma-system/default", "spec.modules[1].channel: must be a string"),
    (0, ("spec", "modules", 0, "customResourcePolicy"), "Keep", "Kyma kyma-system/default", "CreateAndDelete or Ignore"),
    (0, ("spec", "channel"), "Regular!", "Kyma kyma-system/default", "spec.channel: 'Regular!' does not match"),
    (0, ("metadata", "name"), "../escape", "Kyma kyma-system/../escape", "metadata.name: '../escape' is not a DNS-1123"),
    (0, ("metadata", "labels"), ["a"], "Kyma kyma-system/default", "metadata.labels: not a map"),
    (0, ("metadata", "deletionTimestamp"), "2026-03-03T00:00:00Z", "Kyma kyma-system/default", "being deleted"),
    (2, ("spec",), ..., "ModuleTemplate kyma-system/greeter-1.0.0", "spec: missing, or not a map"),
    (2, ("spec", "version"), 1.0, "ModuleTemplate kyma-system/greeter-1.0.0", "spec.version: must be a string"),
    (2, ("spec", "moduleName"), "Greeter", "ModuleTemplate kyma-system/greeter-1.0.0", "spec.moduleName: 'Greeter'"),
    (2, ("spec", "data"), {"kind": "Greeter"}, "ModuleTemplate kyma-system/greeter-1.0.0", "spec.data.apiVersion: required"),
    (2, ("spec", "manager", "kind"), ..., "ModuleTemplate kyma-system/greeter-1.0.0", "spec.manager.kind: required"),
    (2, ("metadata", "name"), "greeter/1.0.0", "ModuleTemplate kyma-system/greeter/1.0.0", "metadata.name: 'greeter/1.0.0'"),
    (1, ("spec", "mandatory"), {"version": "1.0.0"}, "ModuleReleaseMeta kyma-system/greeter", "exactly one of 'mandatory' or 'channels'"),
    (1, ("spec", "channels", 0, "version"), "one", "ModuleReleaseMeta kyma-system/greeter", "spec.channels[0].version: 'one'"),
    (1, ("spec", "moduleName"), "relay", "ModuleReleaseMeta kyma-system/greeter", "must equal metadata.name"),
    (1, ("apiVersion",), "operator.kyma-project.io/v1beta1", "ModuleReleaseMeta kyma-system/greeter", "only operator.kyma-project.io/v1beta2"),
]  # fmt: skip


@pytest.mark.parametrize(("index", "path", "value", "described", "words"), BAD_INPUT)
def test_bad_input_is_a_skip_naming_object_and_field_never_an_exception(
    index: int, path: tuple[str | int, ...], value: Any, described: str, words: str
) -> None:
    objects = runtime_objects()
    objects[index] = changed(objects[index], path, value)
    result = import_kyma(objects)
    reasons = _reasons(result, described)
    assert any(words in reason for reason in reasons), result.skipped
    assert not accounted_for(objects, result)
    # The object refused is in no file: nothing of it is half-written.
    written = {(d.body["kind"], d.body["metadata"]["name"]) for f in result.files for d in f.documents}
    assert (objects[index].kind, objects[index].name) not in written


def test_fields_btp_gitops_does_not_read_are_left_out_and_named() -> None:
    objects = runtime_objects()
    objects[0] = changed(objects[0], ("spec", "modules", 0, "priority"), "high")
    objects[2] = changed(
        objects[2], ("spec", "customStateCheck"), [{"jsonPath": "status.health", "value": "green"}]
    )
    result = import_kyma(objects)
    assert _file(result, "kyma/kyma.yaml")[0]["spec"]["modules"][0] == {"name": "greeter"}
    assert "spec.modules[0].priority (not a field btp-gitops reads)" in _comment(result, "kyma/kyma.yaml")
    assert "spec.customStateCheck (deprecated by Lifecycle Manager" in _comment(
        result, "kyma/catalog/greeter.yaml", 1
    )


def test_nothing_picked_is_dropped_silently_and_other_operators_objects_are_left_alone() -> None:
    objects = runtime_objects()
    foreign = LiveObject(
        {"apiVersion": "sme.sap.com/v1alpha1", "kind": "CAPApplication", "metadata": {"name": "shop"}}, ORIGIN
    )
    result = import_kyma([*objects, foreign])
    assert not accounted_for(objects, result)
    assert "CAPApplication" not in serialized(result)
    # merge_results takes it with any other translator's files: every path is under kyma/.
    assert all(f.path.startswith("kyma/") for f in merge_results([result]).files)


def test_a_password_in_a_template_link_is_never_written() -> None:
    body = template("greeter", "1.0.0")
    body["spec"]["resources"][0]["link"] = "https://robot:s3cr3t-Passw0rd@registry.example.com/greeter.yaml"
    result = import_kyma([LiveObject(body, ORIGIN)])
    text = serialized(result)
    assert "s3cr3t-Passw0rd" not in text
    assert "https://registry.example.com/greeter.yaml" in text


def _raw_manifest(module: str, version: str) -> str:
    kind = module.capitalize()
    objects = [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{module}s.operator.example.com"},
            "spec": {
                "group": "operator.example.com",
                "names": {
                    "kind": kind,
                    "plural": f"{module}s",
                    "singular": module,
                    "listKind": f"{kind}List",
                },
                "scope": "Namespaced",
                "versions": [
                    {
                        "name": "v1alpha1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"{module}-controller-manager"},
            "spec": {
                "selector": {"matchLabels": {"app": module}},
                "template": {
                    "metadata": {"labels": {"app": module}},
                    "spec": {"containers": [{"name": "manager", "image": f"example.com/{module}:{version}"}]},
                },
            },
        },
    ]
    return "".join(f"---\n{yaml.safe_dump(o, sort_keys=True)}" for o in objects)


def fetch_raw_manifests(sources: Path) -> None:
    """What a user does after following the listed items: each raw manifest the Kyma resolves
    (greeter regular, relay fast, auditlog mandatory) put into the folder named."""
    for module, version in (("greeter", "1.0.0"), ("relay", "0.3.0"), ("auditlog", "1.2.0")):
        folder = sources / "kyma/.modules" / module / version
        folder.mkdir(parents=True)
        (folder / f"{module}.yaml").write_text(_raw_manifest(module, version))


def test_what_import_writes_validates_and_renders_once_the_raw_manifests_are_fetched(
    run_cli: RunCli, tmp_path: Path
) -> None:
    sources = tmp_path / "sources"
    result = import_kyma(runtime_objects())
    write_result(result, sources)
    validated = run_cli("validate", sources)
    assert validated.returncode == 0, validated.stderr
    # Before the raw manifests are fetched, the render names the path still missing.
    missing = run_cli("render", sources, "--out", tmp_path / "early", "--cluster", "runtime")
    assert missing.returncode != 0
    assert "sources/kyma/.modules/auditlog/1.2.0: no such file or directory" in missing.stderr
    assert "Traceback" not in missing.stderr
    fetch_raw_manifests(sources)
    out = tmp_path / "out"
    rendered = run_cli("render", sources, "--out", out, "--cluster", "runtime")
    assert rendered.returncode == 0, rendered.stderr
    apps = sorted(p.name for p in (out / "clusters/runtime").iterdir() if p.is_dir())
    assert apps == ["kyma-auditlog", "kyma-greeter", "kyma-relay"]
    greeter = "".join(p.read_text() for p in sorted((out / "clusters/runtime/kyma-greeter").rglob("*.yaml")))
    assert "greeter-controller-manager" in greeter
    assert "example.com/greeter:1.0.0" in greeter
    assert "kind: Greeter" in greeter  # the default CR, spec.data of the template


def test_a_restricted_modules_selector_is_kept_and_the_flag_it_needs_is_said() -> None:
    selector = {
        "matchLabels": {"kyma-project.io/region": "europe-west3"},
        "matchExpressions": [{"key": "kyma-project.io/global-account-id", "operator": "Exists"}],
    }
    objects = runtime_objects()
    objects[4] = changed(objects[4], ("spec", "kymaSelector"), selector)
    result = import_kyma(objects)
    assert _file(result, "kyma/catalog/relay.yaml")[0]["spec"]["kymaSelector"] == selector
    assert "render with --restricted-modules relay" in _comment(result, "kyma/catalog/relay.yaml")
    objects[4] = changed(objects[4], ("spec", "kymaSelector", "matchExpressions", 0, "operator"), "Near")
    reasons = _reasons(import_kyma(objects), "ModuleReleaseMeta kyma-system/relay")
    assert reasons == [
        "spec.kymaSelector.matchExpressions[0].operator: must be In, NotIn, Exists or DoesNotExist"
    ]


def test_the_labels_resolution_reads_are_kept_among_lifecycle_managers_own() -> None:
    objects = runtime_objects()
    labels = {
        "operator.kyma-project.io/beta": "true",
        "operator.kyma-project.io/internal": "true",
        "operator.kyma-project.io/skip-reconciliation": "true",
        "operator.kyma-project.io/sync": "false",
    }
    objects[0] = changed(objects[0], ("metadata", "labels"), labels)
    result = import_kyma(objects)
    kept = _file(result, "kyma/kyma.yaml")[0]["metadata"]["labels"]
    assert kept == {key: value for key, value in labels.items() if not key.endswith("/sync")}
    assert "renders nothing on its first run" in _comment(result, "kyma/kyma.yaml")


def test_a_classic_template_keeps_its_channel_and_legacy_version_annotation() -> None:
    # Before ModuleReleaseMetas: one template per channel, the version in an annotation.
    body = template("greeter", "1.0.0")
    body["metadata"]["name"] = "greeter-regular"
    body["metadata"]["annotations"]["operator.kyma-project.io/module-version"] = "1.0.0"
    del body["spec"]["version"]
    body["spec"]["channel"] = "regular"
    del body["spec"]["moduleName"]  # found by its module-name label
    result = import_kyma(
        [LiveObject(kyma(channel="regular", modules=[{"name": "greeter"}]), ORIGIN), LiveObject(body, ORIGIN)]
    )
    [imported] = _file(result, "kyma/catalog/greeter.yaml")
    assert imported["metadata"]["annotations"] == {"operator.kyma-project.io/module-version": "1.0.0"}
    assert imported["metadata"]["labels"] == {"operator.kyma-project.io/module-name": "greeter"}
    assert imported["spec"]["channel"] == "regular"
    assert imported["spec"]["rawManifest"] == {"path": "../.modules/greeter/1.0.0"}
    # The status says 1.0.0 runs, and the classic template of the regular channel gives it.
    assert "Warning" not in _comment(result, "kyma/kyma.yaml")
