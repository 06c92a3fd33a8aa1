"""Unit tests of `generator.transforms.volatile`: pinning what changes between two chart renders.

Covered: `pinned_value` keeps a value's shape (UUID stays a UUID, lower-case hex keeps its length,
base64 stays decodable base64, anything else becomes `btp-gitops-pinned-<16 hex>`) and is a pure
function of its seed; `pin_volatile_values` pins exactly the differing strings (reporting origin,
object and field path), is stable across calls, leaves identical renders untouched, does not
modify its inputs, and raises NondeterministicChart naming the chart, template, object and field
path when the two renders differ in structure (keys, list lengths, types, non-string values) or
in their set of documents.

Nothing is faked: two renders are two YAML literals, as Helm would have printed them.
"""

from __future__ import annotations

import base64
import copy
import re
import uuid
from typing import Any

import pytest

from btp_gitops.generator.core.errors import NondeterministicChart
from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.transforms.volatile import PinnedValue, pin_volatile_values, pinned_value
from tests.unit.helpers import bodies, documents, manifests

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
PINNED_RE = re.compile(r"^btp-gitops-pinned-[0-9a-f]{16}$")

FIRST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: kyma-system
  annotations:
    checksum/config: 5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef
data:
  CLUSTER_ID: 0f8fad5b-d9cb-469f-a165-70867728950e
  token: c2VjcmV0MTIzNDU2
  password: Zq-aLpXmrW
  stable: keep-me
  list: [same, r4nd-one]
"""

SECOND = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: kyma-system
  annotations:
    checksum/config: 0be4e2b5a0e1f83bd1b5bc6c64e4e6fa1a8c4ef7bd4fc17a6e2e1e1d8c6d5e00
data:
  CLUSTER_ID: 7c9e6679-7425-40de-944b-e07fc1f90ae7
  token: b3RoZXIxMjM0NTY3
  password: Mn-qQwErTy
  stable: keep-me
  list: [same, r4nd-two]
"""

ORIGIN = "sap-btp-operator/templates/configmap.yaml"


def pin(
    first: str, second: str, chart: str = "sap-btp-operator"
) -> tuple[list[dict[str, Any]], list[PinnedValue]]:
    result, pinned = pin_volatile_values(manifests(first, ORIGIN), manifests(second, ORIGIN), chart)
    return bodies(result), pinned


def test_pinned_fields_are_reported_with_origin_object_and_path() -> None:
    _, pinned = pin(FIRST, SECOND)
    ref = "ConfigMap kyma-system/cfg"
    assert pinned == [
        PinnedValue(ORIGIN, ref, "metadata.annotations.checksum/config"),
        PinnedValue(ORIGIN, ref, "data.CLUSTER_ID"),
        PinnedValue(ORIGIN, ref, "data.token"),
        PinnedValue(ORIGIN, ref, "data.password"),
        PinnedValue(ORIGIN, ref, "data.list[1]"),
    ]


def test_pinned_values_keep_their_shape_and_other_fields_stay() -> None:
    (body,), _ = pin(FIRST, SECOND)
    data = body["data"]
    assert UUID_RE.match(data["CLUSTER_ID"])
    assert uuid.UUID(data["CLUSTER_ID"]).version == 5
    assert data["CLUSTER_ID"] not in {
        "0f8fad5b-d9cb-469f-a165-70867728950e",
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    }
    checksum = body["metadata"]["annotations"]["checksum/config"]
    assert re.fullmatch(r"[0-9a-f]{64}", checksum)
    assert base64.b64decode(data["token"], validate=True).decode().startswith("btp-gitops-pinned-")
    assert PINNED_RE.match(data["password"])
    assert data["stable"] == "keep-me"
    assert data["list"][0] == "same"
    assert PINNED_RE.match(data["list"][1])
    assert body["metadata"]["name"] == "cfg"


def test_pinning_is_stable_across_calls_and_independent_of_the_volatile_values() -> None:
    once, _ = pin(FIRST, SECOND)
    again, _ = pin(FIRST, SECOND)
    other_random = SECOND.replace(
        "7c9e6679-7425-40de-944b-e07fc1f90ae7", "16fd2706-8baf-433b-82eb-8c7fada847da"
    )
    third, _ = pin(other_random, FIRST)
    assert once == again
    assert once[0]["data"]["CLUSTER_ID"] == third[0]["data"]["CLUSTER_ID"]


def test_pinned_value_depends_on_chart_and_field() -> None:
    (a,), _ = pin(FIRST, SECOND, chart="one")
    (b,), _ = pin(FIRST, SECOND, chart="two")
    assert a["data"]["CLUSTER_ID"] != b["data"]["CLUSTER_ID"]
    assert a["data"]["password"] != a["data"]["list"][1]


def test_identical_renders_pin_nothing_and_inputs_are_not_modified() -> None:
    first, second = manifests(FIRST, ORIGIN), manifests(FIRST, ORIGIN)
    untouched = copy.deepcopy([m.body for m in first])
    result, pinned = pin_volatile_values(first, second, "c")
    assert pinned == []
    assert bodies(result) == documents(FIRST)
    assert [m.body for m in first] == untouched
    result, _ = pin_volatile_values(manifests(FIRST, ORIGIN), manifests(SECOND, ORIGIN), "c")
    assert [m.origin for m in result] == [ORIGIN]


@pytest.mark.parametrize(
    ("original", "check"),
    [
        pytest.param("0f8fad5b-d9cb-469f-a165-70867728950e", UUID_RE.match, id="uuid"),
        pytest.param("0F8FAD5B-D9CB-469F-A165-70867728950E", UUID_RE.match, id="upper-case-uuid"),
        pytest.param("a" * 64, re.compile(r"^[0-9a-f]{64}$").match, id="sha256-hex"),
        pytest.param(
            "0123456789abcdef" * 8, re.compile(r"^[0-9a-f]{128}$").match, id="hex-longer-than-digest"
        ),
        pytest.param("abc", re.compile(r"^[0-9a-f]{3}$").match, id="short-hex"),
        pytest.param("c2VjcmV0MTIzNDU2", lambda v: base64.b64decode(v, validate=True), id="base64"),
        pytest.param("Zq-aLpXmrW", PINNED_RE.match, id="random-alnum"),
        pytest.param("short", PINNED_RE.match, id="other"),
    ],
)
def test_pinned_value_shapes(original: str, check: object) -> None:
    value = pinned_value("seed", original)
    assert callable(check)
    assert check(value)
    assert value == pinned_value("seed", original)
    assert value != pinned_value("other seed", original)


def test_pinned_value_base64_decodes_to_the_marker() -> None:
    digest16 = pinned_value("seed", "x")[len("btp-gitops-pinned-") :]
    assert (
        base64.b64decode(pinned_value("seed", "c2VjcmV0MTIzNDU2")) == f"btp-gitops-pinned-{digest16}".encode()
    )


BASE = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: ns}\n"


@pytest.mark.parametrize(
    ("first", "second", "where"),
    [
        pytest.param("data: {a: x}", "data: {b: x}", "data", id="different-keys"),
        pytest.param("data: {a: x}", "", "(document root)", id="key-comes-and-goes"),
        pytest.param("spec: {items: [a, b]}", "spec: {items: [a]}", "spec.items", id="list-length"),
        pytest.param("spec: {replicas: 1}", "spec: {replicas: 2}", "spec.replicas", id="differing-int"),
        pytest.param("spec: {enabled: true}", "spec: {enabled: false}", "spec.enabled", id="differing-bool"),
        pytest.param("spec: {v: '1'}", "spec: {v: 1}", "spec.v", id="type-changes"),
        pytest.param(
            "spec: {x: {y: [{z: a}]}}", "spec: {x: {y: [{z: {}}]}}", "spec.x.y[0].z", id="nested-in-list"
        ),
    ],
)
def test_structural_differences_raise_naming_template_and_field(first: str, second: str, where: str) -> None:
    with pytest.raises(NondeterministicChart) as caught:
        pin(BASE + first, BASE + second, chart="mychart")
    assert caught.value.message == (
        f"chart mychart: {ORIGIN} (ConfigMap ns/cfg) changes shape between two renders at {where}; "
        "pin its random inputs with values"
    )
    assert caught.value.exit_code == ExitCode.CHART


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(["a.yaml"], ["b.yaml"], id="other-template"),
        pytest.param(["a.yaml"], ["a.yaml", "a.yaml"], id="extra-document"),
        pytest.param(["a.yaml", "b.yaml"], ["b.yaml", "a.yaml"], id="reordered"),
        pytest.param(["a.yaml"], [], id="document-gone"),
    ],
)
def test_different_document_sets_raise(first: list[str], second: list[str]) -> None:
    render_one = [m for origin in first for m in manifests(BASE, f"c/templates/{origin}")]
    render_two = [m for origin in second for m in manifests(BASE, f"c/templates/{origin}")]
    with pytest.raises(NondeterministicChart) as caught:
        pin_volatile_values(render_one, render_two, "mychart")
    assert caught.value.message == (
        "chart mychart renders a different set of documents each time; pin its random inputs with values"
    )
