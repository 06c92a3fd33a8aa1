"""Content jobs of a version: run once per version, one after another, in `contentJobs` order.

A Job's pod template is immutable, so each Job is bound to its version by name
(`identity.content_job_name`): a new version brings new Jobs, an unchanged version keeps its
Jobs byte for byte and the GitOps tool leaves them alone. Order comes from sync stages: the n-th
content job of a version is step n of `Stage.RELEASE_JOBS`, so it starts once the workloads are
healthy and the job before it has succeeded, and routing switches only after the last one.

CAP Operator's job fields: restartPolicy Never unless set, backoffLimit, ttlSecondsAfterFinished
and activeDeadlineSeconds passed through, `x4.sap.com/disable-karydia: "true"` on the pods.
"""

from __future__ import annotations

from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.domains.cap.credentials import CredentialWiring
from btp_gitops.generator.domains.cap.identity import (
    DISABLE_KARYDIA,
    content_job_name,
    workload_annotations,
    workload_labels,
)
from btp_gitops.generator.domains.cap.model import Application, Version, Workload
from btp_gitops.generator.domains.cap.pods import PodPlan, pod_template

_JOB_FIELDS = ("backoffLimit", "ttlSecondsAfterFinished", "activeDeadlineSeconds")


def content_job(
    app: Application, version: Version, workload: Workload, credentials: CredentialWiring
) -> KubeObject:
    labels = workload_labels(app, version, workload)
    plan = PodPlan(
        version=version,
        workload=workload,
        labels={**labels, DISABLE_KARYDIA: "true"},
        annotations=workload.annotations,
        credentials=credentials,
        env=list(workload.definition.get("env") or []),
        default_restart_policy="Never",
    )
    spec: dict[str, Any] = {
        key: workload.definition[key] for key in _JOB_FIELDS if key in workload.definition
    }
    spec["template"] = pod_template(plan)
    metadata: dict[str, Any] = {
        "name": content_job_name(version, workload),
        "namespace": version.namespace,
        "labels": labels,
        "annotations": workload_annotations(version, workload),
    }
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def content_job_notes(version: Version) -> list[Note]:
    """A finished Job removed by its TTL is missing from the cluster, so a GitOps tool runs it again."""
    return [
        Note(
            Level.WARNING,
            "JobRecreatedAfterTtl",
            f"{version.source.file}: document {version.source.document} ({version.source.ref}): "
            f"{workload.definition_path('ttlSecondsAfterFinished')}",
            f"Job {content_job_name(version, workload)} is deleted "
            f"{workload.definition['ttlSecondsAfterFinished']}s after it finishes; Argo CD and Flux then "
            "see it missing and run it again on their next sync: leave ttlSecondsAfterFinished unset for "
            "content jobs",
        )
        for workload in version.content_jobs_in_order()
        if "ttlSecondsAfterFinished" in workload.definition
    ]
