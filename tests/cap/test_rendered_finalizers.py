"""The controller's deletion finalizers, rendered: every CAPApplication, CAPApplicationVersion and
CAPTenant a render writes carries the very finalizer the controller releases it with, and no other
object carries one, so that a prune while the controller is down waits for its deletion.

Covered: examples/cap-app (an application, two versions, consumer tenants and the derived provider
tenant) and examples/cap-services-only (an application without tenants); the finalizer names are
compared with the controller's own constants and with CAP Operator's names. Real components: the
in-process render pipeline; nothing is faked.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from btp_gitops.controller.cap.deletion import APPLICATION_FINALIZER, TENANT_FINALIZER, VERSION_FINALIZER
from tests.cap.conftest import CAP_APP, SERVICES_ONLY, objects_of, render_files

CONTROLLER_FINALIZERS = {
    "CAPApplication": APPLICATION_FINALIZER,
    "CAPApplicationVersion": VERSION_FINALIZER,
    "CAPTenant": TENANT_FINALIZER,
}


def test_the_controller_uses_cap_operators_finalizer_names() -> None:
    assert CONTROLLER_FINALIZERS == {
        "CAPApplication": "sme.sap.com/capapplication",
        "CAPApplicationVersion": "sme.sap.com/capapplicationversion",
        "CAPTenant": "sme.sap.com/captenant",
    }


@pytest.mark.parametrize(
    ("source", "expected_kinds"),
    [
        pytest.param(
            CAP_APP,
            # bookshop, its versions 1.0.0 and 1.1.0, three consumer tenants and the provider
            {"CAPApplication": 1, "CAPApplicationVersion": 2, "CAPTenant": 4},
            id="cap-app",
        ),
        pytest.param(SERVICES_ONLY, {"CAPApplication": 1, "CAPApplicationVersion": 2}, id="services-only"),
    ],
)
def test_only_the_objects_the_controller_finalizes_carry_its_finalizer(
    source: Path, expected_kinds: dict[str, int]
) -> None:
    finalized: Counter[str] = Counter()
    for path, obj in objects_of(render_files(source)).items():
        finalizers = obj["metadata"].get("finalizers")
        expected = CONTROLLER_FINALIZERS.get(obj["kind"])
        if expected is None:
            assert finalizers is None, f"{path}: {obj['kind']} is not finalized by the controller"
            continue
        assert finalizers == [expected], path
        finalized[obj["kind"]] += 1
    assert dict(finalized) == expected_kinds
