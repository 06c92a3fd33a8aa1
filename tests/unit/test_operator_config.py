"""Unit tests of `generator.transforms.operator_config`: the operator ConfigMap as BTP Manager filled it.

Covered: `CLUSTER_ID`, `RELEASE_NAMESPACE`, `MANAGEMENT_NAMESPACE` and `ENABLE_LIMITED_CACHE` set
in `sap-btp-operator-config` (overriding the chart's values, keeping its other keys, creating
`data` when missing or null); other ConfigMaps and a Secret of the same name left alone.

Nothing is faked: YAML literals in, the real transform, YAML literals out.
"""

from __future__ import annotations

import pytest

from btp_gitops.generator.transforms.operator_config import OperatorSettings, apply_operator_settings
from tests.unit.helpers import bodies, documents, manifests


@pytest.mark.parametrize(
    ("settings", "given", "expected"),
    [
        pytest.param(
            OperatorSettings(cluster_id="c-123", credentials_namespace="sap-btp-operator"),
            """\
kind: ConfigMap
metadata: {name: sap-btp-operator-config, namespace: kyma-system}
data: {CLUSTER_ID: chart-default, ENABLE_LIMITED_CACHE: 'false', LOG_LEVEL: info}
""",
            """\
kind: ConfigMap
metadata: {name: sap-btp-operator-config, namespace: kyma-system}
data:
  CLUSTER_ID: c-123
  RELEASE_NAMESPACE: sap-btp-operator
  MANAGEMENT_NAMESPACE: sap-btp-operator
  ENABLE_LIMITED_CACHE: 'true'
  LOG_LEVEL: info
""",
            id="overrides-and-keeps-other-keys",
        ),
        pytest.param(
            OperatorSettings(
                cluster_id="c-1", credentials_namespace="kyma-system", enable_limited_cache=False
            ),
            "kind: ConfigMap\nmetadata: {name: sap-btp-operator-config}\n",
            """\
kind: ConfigMap
metadata: {name: sap-btp-operator-config}
data:
  CLUSTER_ID: c-1
  RELEASE_NAMESPACE: kyma-system
  MANAGEMENT_NAMESPACE: kyma-system
  ENABLE_LIMITED_CACHE: 'false'
""",
            id="creates-data",
        ),
        pytest.param(
            OperatorSettings(cluster_id="c-1", credentials_namespace="n"),
            "kind: ConfigMap\nmetadata: {name: sap-btp-operator-config}\ndata: null\n",
            """\
kind: ConfigMap
metadata: {name: sap-btp-operator-config}
data: {CLUSTER_ID: c-1, RELEASE_NAMESPACE: n, MANAGEMENT_NAMESPACE: n, ENABLE_LIMITED_CACHE: 'true'}
""",
            id="replaces-null-data",
        ),
        pytest.param(
            OperatorSettings(cluster_id="c-1", credentials_namespace="n"),
            """\
kind: ConfigMap
metadata: {name: other-config}
data: {CLUSTER_ID: untouched}
---
kind: Secret
metadata: {name: sap-btp-operator-config}
data: {CLUSTER_ID: dW50b3VjaGVk}
""",
            """\
kind: ConfigMap
metadata: {name: other-config}
data: {CLUSTER_ID: untouched}
---
kind: Secret
metadata: {name: sap-btp-operator-config}
data: {CLUSTER_ID: dW50b3VjaGVk}
""",
            id="other-objects-untouched",
        ),
    ],
)
def test_apply_operator_settings(settings: OperatorSettings, given: str, expected: str) -> None:
    assert bodies(apply_operator_settings(manifests(given), settings)) == documents(expected)
