"""What the BtpOperator reconcilers are told: names, where the module resources are, and BTP
Manager's default timeouts, in seconds."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from btp_gitops.controller.errors import ConfigurationError
from btp_gitops.generator.domains.btp_operator import BTP_OPERATOR_FINALIZER
from btp_gitops.generator.io import bundled

# The render writes the same finalizer onto the BtpOperator (the generator's constant).
FINALIZER = BTP_OPERATOR_FINALIZER
FORCE_DELETE_LABEL = "force-delete"


@dataclass(frozen=True, slots=True)
class BtpOperatorSettings:
    namespace: str = "kyma-system"
    name: str = "btpoperator"
    # The operator Deployment as the render names it (the chart's `<release>-controller-manager`).
    operator_deployment: str = "sap-btp-operator-controller-manager"
    # The Secret BTP Manager required; in this split the ExternalSecret copies it for the operator.
    required_secret_namespace: str = "kyma-system"
    required_secret: str = "sap-btp-manager"
    module_resources_dir: Path = field(default_factory=bundled.module_resources_dir)
    hard_delete_timeout: float = 20 * 60.0
    hard_delete_check_interval: float = 10.0
    ready_check_interval: float = 30.0  # while the operator Deployment is not Available yet
    ready_requeue: float = 15 * 60.0  # ReadyStateRequeueInterval
    processing_requeue: float = 5 * 60.0  # ProcessingStateRequeueInterval: Secret problems
    blocked_check_interval: float = 30.0  # deletion blocked by instances or bindings
    outdated_sweep_interval: float = 15 * 60.0

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, int | float) and value <= 0:
                raise ConfigurationError(f"{item.name} must be a positive number of seconds, not {value}")
