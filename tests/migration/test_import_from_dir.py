"""`btp-gitops import --from-dir`: `kubectl get -o yaml` dumps of what CAP Operator left in a
cluster, turned into the sources of examples/cap-app, through the CLI as users run it.

The dumps are made from the example's sources by tests/migration/cap_operator.py (CAP Operator's
finalizers, labels, annotations, owner references, statuses) and by the API server's metadata;
the import must give back the example's documents, each with a comment saying where it came
from, and the sources must render. Bad input (unknown fields, a missing status, Secrets with
credentials, names that cannot be paths, links, huge files, files already there) gives a clear
error or a listed skip, never a half-written tree or exit 70.
"""

from __future__ import annotations

import copy
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import RunCli
from tests.migration.cap_operator import as_left_by_operator, server_metadata
from tests.migration.sources import (
    OPERATOR_TENANT_STATUS,
    as_imported_from_cap_operator,
    example_documents,
    imported_layout,
    provider_record,
    read_tree,
    source_objects,
    without_comments,
)
from tests.support.keys import pem_ec

CREDENTIAL = "hunter2-0f6c1d2e3a4b5c6d7e8f9a0b1c2d3e4f"


def operator_dump() -> list[dict[str, Any]]:
    sources = source_objects()
    return server_metadata(as_left_by_operator(sources, OPERATOR_TENANT_STATUS))


def write_dumps(directory: Path, objects: list[dict[str, Any]]) -> None:
    """As users dump a cluster: a `kind: List` per kind (`kubectl get <kind> -o yaml`), one object
    per file (`kubectl get <kind> <name> -o yaml`) in a nested directory, a multi-document file."""
    directory.mkdir(parents=True, exist_ok=True)
    lists = [o for o in objects if o["kind"] in ("CAPApplication", "CAPApplicationVersion", "Domain")]
    (directory / "cap.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": lists}))
    tenants = directory / "tenants"
    tenants.mkdir()
    for tenant in (o for o in objects if o["kind"] == "CAPTenant"):
        file_name = tenant["metadata"]["name"].replace("/", "_")  # a name that is no path stays in the dump
        (tenants / f"{file_name}.yaml").write_text(yaml.safe_dump(tenant))
    rest = [o for o in objects if o["kind"] == "ClusterDomain"]
    (directory / "cluster.yml").write_text(yaml.safe_dump_all(rest))


def imported(out: Path) -> dict[str, list[dict[str, Any]]]:
    return {path: [d for d in yaml.safe_load_all(text) if d] for path, text in read_tree(out).items()}


def test_dumps_of_cap_operator_objects_import_as_the_example_sources(run_cli: RunCli, tmp_path: Path) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "imported 10 objects from dumps into 9 files under sources" in result.stdout
    assert "warning" not in result.stderr
    # The example's documents, each version with the generation CAP Operator reconciled it at.
    expected = imported_layout(as_imported_from_cap_operator(source_objects()))
    assert imported(tmp_path / "sources") == expected
    # Comments say where each object came from and what was left out.
    acme = (tmp_path / "sources/cap/bookshop/bookshop/tenants/acme.yaml").read_text()
    assert acme.startswith("# imported from dumps/tenants/acme.yaml: document 1\n")
    for left_out in ("metadata.finalizers", "metadata.ownerReferences", "sme.sap.com/owner-generation"):
        assert left_out in acme
    assert "status.lastCompletedOperation derived" in acme
    assert "spec.version 1.0.0 left out" in acme
    version = (tmp_path / "sources/cap/bookshop/bookshop/version-1.1.0.yaml").read_text()
    assert version.startswith("# imported from dumps/cap.yaml: document 1, item 5\n")
    application = (tmp_path / "sources/cap/bookshop/bookshop/capapplication.yaml").read_text()
    assert "imported from dumps/cap.yaml: document 1, item 1" in application
    # The imported sources render, as the example does.
    rendered = run_cli("render", "sources", "--out", "repo", "-q", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr


def test_the_same_objects_in_any_order_give_the_same_bytes(run_cli: RunCli, tmp_path: Path) -> None:
    objects = operator_dump()
    write_dumps(tmp_path / "first", objects)
    shuffled = list(objects)
    random.Random(7).shuffle(shuffled)
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "all.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": shuffled})
    )
    for name in ("first", "second"):
        result = run_cli("import", "--from-dir", name, "--out", f"out-{name}", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    first, second = read_tree(tmp_path / "out-first"), read_tree(tmp_path / "out-second")
    assert first.keys() == second.keys()
    assert {p: without_comments(t) for p, t in first.items()} == {
        p: without_comments(t) for p, t in second.items()
    }
    again = run_cli("import", "--from-dir", "first", "--out", "out-again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert read_tree(tmp_path / "out-again") == first


def test_secrets_in_the_dumps_are_never_read_written_or_shown(run_cli: RunCli, tmp_path: Path) -> None:
    objects = operator_dump()
    binding = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "bookshop-uaa-binding", "namespace": "bookshop"},
        "stringData": {"clientsecret": CREDENTIAL},
        "data": {"credentials": "eyJjbGllbnRzZWNyZXQiOiJodW50ZXIyIn0="},
    }
    write_dumps(tmp_path / "dumps", [*objects, binding])
    (tmp_path / "dumps" / "secrets.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [binding]})
    )
    for output in ("text", "json"):
        result = run_cli(
            "import", "--from-dir", "dumps", "--out", f"sources-{output}", "-o", output, cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert CREDENTIAL not in result.stdout + result.stderr
        assert "eyJjbGllbnRzZWNyZXQi" not in result.stdout + result.stderr
        written = "".join(read_tree(tmp_path / f"sources-{output}").values())
        assert CREDENTIAL not in written and "eyJjbGllbnRzZWNyZXQi" not in written
        assert "bookshop-uaa-binding" in written  # the reference stays a reference
    report = json.loads(
        run_cli("import", "--from-dir", "dumps", "--out", "s3", "-o", "json", cwd=tmp_path).stdout
    )
    assert {k: v for k, v in report["passedOver"][0].items() if k != "reason"} == {
        "object": "Secret bookshop/bookshop-uaa-binding",
        "origin": "dumps/secrets.yaml: document 1, item 1",
    }
    assert "import reads no Secret" in report["passedOver"][0]["reason"]


def test_objects_that_cannot_be_expressed_are_listed_and_the_rest_written(
    run_cli: RunCli, tmp_path: Path
) -> None:
    objects = operator_dump()
    by_name = {o["metadata"]["name"]: o for o in objects}
    by_name["globex"]["spec"]["plan"] = "premium"  # a field the schema does not know
    orphan = {**by_name["acme"], "metadata": {**by_name["acme"]["metadata"], "name": "orphan"}}
    orphan["spec"] = {**orphan["spec"], "capApplicationInstance": "gone"}
    bad_name = {**by_name["acme"], "metadata": {**by_name["acme"]["metadata"], "name": "../../etc"}}
    too_long = {
        **by_name["acme"],
        "metadata": {**by_name["acme"]["metadata"], "name": ".".join(["a" * 60] * 4)},
    }
    lone_version = {**by_name["bookshop-1-0-0"], "metadata": {"name": "other-1", "namespace": "elsewhere"}}
    write_dumps(tmp_path / "dumps", [*objects, orphan, bad_name, too_long, lone_version])
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", "-o", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    reasons = {s["object"]: s["reason"] for s in report["skipped"]}
    assert reasons.keys() == {
        "CAPTenant bookshop/globex",
        "CAPTenant bookshop/orphan",
        "CAPTenant bookshop/../../etc",
        f"CAPTenant bookshop/{too_long['metadata']['name']}",
        "CAPApplicationVersion elsewhere/other-1",
    }
    assert "longer than 242 characters" in reasons[f"CAPTenant bookshop/{too_long['metadata']['name']}"]
    assert "spec" in reasons["CAPTenant bookshop/globex"] and "plan" in reasons["CAPTenant bookshop/globex"]
    assert "CAPApplication bookshop/gone was not read" in reasons["CAPTenant bookshop/orphan"]
    assert "cannot be a file name" in reasons["CAPTenant bookshop/../../etc"]
    assert (
        "CAPApplication elsewhere/bookshop was not read" in reasons["CAPApplicationVersion elsewhere/other-1"]
    )
    files = read_tree(tmp_path / "sources")
    assert "cap/bookshop/bookshop/tenants/globex.yaml" not in files
    assert "cap/bookshop/bookshop/tenants/acme.yaml" in files
    assert not list(tmp_path.rglob("etc*"))
    text = run_cli("import", "--from-dir", "dumps", "--out", "again", cwd=tmp_path)
    assert text.returncode == 0
    assert "warning: skipped CAPTenant bookshop/orphan (dumps/tenants/orphan.yaml: document 1)" in text.stderr
    assert "5 skipped" in text.stdout


def test_a_tenant_without_status_is_written_with_a_warning_comment(run_cli: RunCli, tmp_path: Path) -> None:
    objects = operator_dump()
    for body in objects:
        if body["metadata"]["name"] == "acme":
            del body["status"]
    write_dumps(tmp_path / "dumps", objects)
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    acme_text = (tmp_path / "sources/cap/bookshop/bookshop/tenants/acme.yaml").read_text()
    assert "no status was read: a render provisions this tenant" in acme_text
    assert "status" not in yaml.safe_load(acme_text)


@pytest.mark.parametrize("case", ["symlink", "huge", "not-yaml", "not-an-object"])
def test_unreadable_dumps_are_refused_and_nothing_is_written(
    run_cli: RunCli, tmp_path: Path, case: str
) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    outside = tmp_path / "outside.yaml"
    outside.write_text(yaml.safe_dump(provider_record()))
    if case == "symlink":
        (tmp_path / "dumps" / "tenants" / "linked.yaml").symlink_to(outside)
        expected = "dumps/tenants/linked.yaml: a link to"
    elif case == "huge":
        with open(tmp_path / "dumps" / "huge.yaml", "wb") as handle:
            handle.truncate(65 * 1024 * 1024)  # sparse: nothing to write, larger than the 64 MiB limit
        expected = "dumps/huge.yaml: the file is too large (65 MiB, the limit is 64 MiB)"
    elif case == "not-yaml":
        (tmp_path / "dumps" / "broken.yaml").write_text("kind: CAPTenant\n  metadata: [\n")
        expected = "dumps/broken.yaml: document 1: invalid YAML"
    else:
        (tmp_path / "dumps" / "list.json").write_text(json.dumps([1, 2]))
        expected = "dumps/list.json: document 1: not a Kubernetes object"
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "sources").exists()


def test_existing_files_are_refused_unless_forced_and_nothing_is_half_written(
    run_cli: RunCli, tmp_path: Path
) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    acme = tmp_path / "sources/cap/bookshop/bookshop/tenants/acme.yaml"
    acme.parent.mkdir(parents=True)
    acme.write_text("# mine\n")
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 5, result.stderr
    assert (
        "already holds cap/bookshop/bookshop/tenants/acme.yaml; nothing written (pass --force"
        in result.stderr
    )
    assert read_tree(tmp_path / "sources") == {"cap/bookshop/bookshop/tenants/acme.yaml": "# mine\n"}
    forced = run_cli("import", "--from-dir", "dumps", "--out", "sources", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "1 of them overwritten" in forced.stdout
    assert yaml.safe_load(acme.read_text()) == example_documents()["tenants/acme.yaml"][0]
    assert not [p for p in (tmp_path / "sources").iterdir() if p.name.startswith(".")]


def test_a_link_in_the_output_is_never_written_through(run_cli: RunCli, tmp_path: Path) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "sources").mkdir()
    os.symlink(elsewhere, tmp_path / "sources" / "cap")
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 5, result.stderr
    assert "symbolic link" in result.stderr
    assert not list(elsewhere.iterdir())


def test_usage_errors_say_what_is_wrong(run_cli: RunCli, tmp_path: Path) -> None:
    both = run_cli("import", "--from-dir", "d", "--context", "x", "--out", "o", "-o", "json", cwd=tmp_path)
    assert both.returncode == 2
    assert json.loads(both.stdout)["error"]["message"].startswith("--from-dir reads dumps")
    missing = run_cli("import", "--from-dir", "nowhere", "--out", "o", cwd=tmp_path)
    assert missing.returncode == 2
    assert "--from-dir nowhere: No such file or directory" in missing.stderr
    bad_namespace = run_cli("import", "--namespace", "Bad_NS", "--out", "o", cwd=tmp_path)
    assert bad_namespace.returncode == 2
    assert "--namespace 'Bad_NS' is not a DNS-1123 label" in bad_namespace.stderr


def test_an_application_its_schema_refuses_takes_its_versions_and_tenants_with_it(
    run_cli: RunCli, tmp_path: Path
) -> None:
    objects = operator_dump()
    for body in objects:
        if body["kind"] == "CAPApplication":
            body["spec"]["btp"]["services"][0]["secret"] = 42  # a number where a Secret's name goes
    write_dumps(tmp_path / "dumps", objects)
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", "-o", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    reasons = {s["object"]: s["reason"] for s in report["skipped"]}
    assert "spec.btp.services[0].secret" in reasons["CAPApplication bookshop/bookshop"]
    for dependent in ("CAPApplicationVersion bookshop/bookshop-1-0-0", "CAPTenant bookshop/acme"):
        assert reasons[dependent] == (
            "what it belongs to was not imported (cap/bookshop/bookshop/capapplication.yaml, listed above)"
        )
    assert report["files"] == ["cap/bookshop/domains.yaml", "cap/cluster-domains.yaml"]
    rendered = run_cli("render", "sources", "--out", "repo", "-q", cwd=tmp_path)
    assert rendered.returncode == 0, rendered.stderr


def test_a_private_key_in_an_object_is_refused_and_never_written_or_shown(
    run_cli: RunCli, tmp_path: Path
) -> None:
    key = pem_ec()
    objects = operator_dump()
    for body in objects:
        if body["metadata"]["name"] == "bookshop-1-0-0":
            body["spec"]["workloads"][0]["deploymentDefinition"]["env"].append(
                {"name": "SIGNING_KEY", "value": key}
            )
    write_dumps(tmp_path / "dumps", objects)
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 5, result.stderr
    assert "refusing to write credentials" in result.stderr
    assert "spec.workloads[0].deploymentDefinition.env[1].value: contains" in result.stderr
    body_line = key.splitlines()[1]
    assert body_line not in result.stdout + result.stderr
    assert not (tmp_path / "sources").exists()


def test_a_dump_file_name_cannot_break_out_of_the_comment(run_cli: RunCli, tmp_path: Path) -> None:
    application = example_documents()["capapplication.yaml"][0]
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "x\nkind: Secret\n.yaml").write_text(yaml.safe_dump(application))
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "sources/cap/bookshop/bookshop/capapplication.yaml").read_text()
    assert text.startswith("# imported from dumps/x\\x0akind: Secret\\x0a.yaml: document 1\napiVersion:")
    assert yaml.safe_load(text) == application


ODD_SHAPES: list[tuple[str, Any]] = [
    ("labels with a number as key", {"metadata": {"labels": {1: "a", "b": "c"}}}),
    ("annotations that are a list", {"metadata": {"annotations": ["a"]}}),
    ("metadata that is a list", {"metadata": ["acme"]}),
    ("a status that is a list", {"status": ["Ready"]}),
    (
        "previous versions that are maps",
        {"status": {"state": "Ready", "previousCAPApplicationVersions": [{"a": 1}]}},
    ),
    ("a spec that is a string", {"spec": "acme"}),
    ("a name that is a number", {"metadata": {"name": 42}}),
    (
        "an unknown state",
        {"status": {"state": "Sleeping", "currentCAPApplicationVersionInstance": "bookshop-1-0-0"}},
    ),
]


@pytest.mark.parametrize(("case", "change"), ODD_SHAPES, ids=[case for case, _ in ODD_SHAPES])
def test_odd_shapes_are_skips_or_errors_never_a_crash(
    run_cli: RunCli, tmp_path: Path, case: str, change: Any
) -> None:
    objects = operator_dump()
    acme = next(o for o in objects if o["metadata"]["name"] == "acme")
    for field_name, value in change.items():
        if isinstance(value, dict) and isinstance(acme.get(field_name), dict):
            acme[field_name] = {**acme[field_name], **value}
        else:
            acme[field_name] = value
    write_dumps(tmp_path / "dumps", [o for o in objects if o is not acme])
    (tmp_path / "dumps" / "odd.yaml").write_text(yaml.safe_dump(acme))
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", "-o", "json", cwd=tmp_path)
    assert result.returncode in (0, 3), result.stderr
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    if result.returncode == 0:
        assert (tmp_path / "sources/cap/bookshop/bookshop/tenants/globex.yaml").is_file()
        # acme is written, or listed with the reason: never dropped without a word.
        written = [p.name for p in (tmp_path / "sources/cap/bookshop/bookshop/tenants").iterdir()]
        skipped = [s["object"] for s in document["skipped"]]
        assert {"acme.yaml", "42.yaml"} & set(written) or [o for o in skipped if o.startswith("CAPTenant")]
    else:
        assert document["exitCode"] == 3
        assert not (tmp_path / "sources").exists()


def test_a_move_that_fails_midway_is_undone(run_cli: RunCli, tmp_path: Path) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    blocking = tmp_path / "sources/cap/bookshop/bookshop/tenants"
    blocking.parent.mkdir(parents=True)
    blocking.write_text("a file where the tenants' directory goes\n")
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 5, result.stderr
    assert "cannot write into sources" in result.stderr
    # capapplication.yaml sorts before the tenants and was moved into place first: it is gone again.
    assert read_tree(tmp_path / "sources") == {
        "cap/bookshop/bookshop/tenants": "a file where the tenants' directory goes\n"
    }


def test_a_tenant_caught_mid_operation_says_so(run_cli: RunCli, tmp_path: Path) -> None:
    objects = operator_dump()
    for body in objects:
        if body["metadata"]["name"] == "globex":
            body["status"] = {"state": "Provisioning", "observedGeneration": 1}
    write_dumps(tmp_path / "dumps", objects)
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    globex = (tmp_path / "sources/cap/bookshop/bookshop/tenants/globex.yaml").read_text()
    assert "# state Provisioning: an operation had not completed when this was read" in globex
    assert yaml.safe_load(globex)["status"] == {"state": "Provisioning"}


def test_the_report_is_the_same_document_in_json_and_yaml_and_quiet_prints_nothing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    write_dumps(tmp_path / "dumps", operator_dump())
    as_json = run_cli("import", "--from-dir", "dumps", "--out", "a", "-o", "json", cwd=tmp_path)
    as_yaml = run_cli("import", "--from-dir", "dumps", "--out", "a", "-o", "yaml", "--force", cwd=tmp_path)
    assert as_json.returncode == as_yaml.returncode == 0, as_json.stderr + as_yaml.stderr
    report = json.loads(as_json.stdout)
    assert {**yaml.safe_load(as_yaml.stdout), "overwritten": []} == report
    assert report["objects"] == 10 and len(report["files"]) == 9 and report["skipped"] == []
    quiet = run_cli("import", "--from-dir", "dumps", "--out", "b", "-q", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""


def test_an_application_named_like_a_file_of_its_namespace_is_listed_not_clashing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    documents = example_documents()
    application = copy.deepcopy(documents["capapplication.yaml"][0])
    application["metadata"]["name"] = "domains.yaml"  # a DNS-1123 subdomain, and the namespace's domains file
    domain = documents["domains.yaml"][0]
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "all.yaml").write_text(yaml.safe_dump_all([application, domain]))
    result = run_cli("import", "--from-dir", "dumps", "--out", "sources", "-o", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["files"] == ["cap/bookshop/domains.yaml"]
    assert report["skipped"] == [
        {
            "object": "CAPApplication bookshop/domains.yaml",
            "origin": "dumps/all.yaml: document 1",
            "reason": "cap/bookshop/domains.yaml/capapplication.yaml: cap/bookshop/domains.yaml is a file of "
            "another object",
        }
    ]
