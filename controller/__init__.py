"""btp-gitops controller: the few reconcilers that need live cluster state.

Tenant subscription callbacks, deletion finalizers and version cleanup live here; everything that
is a pure function of the desired state is rendered by `generator` instead. The controller reuses
the generator rather than rendering again, functions as well as models (a tenant's plan, its Job
names and Jobs, the catalogs, source loading and schema validation, the credentials rules, the
module-resources format), through the public faces only: `generator.domains.cap`,
`generator.domains.btp_operator`, `generator.core` and the readers of `generator.io`.

Level-triggered and restartable: a reconciler gets a key, never an event (controller.runtime),
reads the live object and decides from what the cluster and the source repository show. What a
later step needs survives in the cluster or in Git, never only in memory: a hard delete's start
is its condition's `lastTransitionTime`, a pending callback is a ConfigMap with its verdict
stored before the PUT, a tenant operation's progress is its Jobs, its outcome is its record's
status in Git. A process killed at any point resumes by listing everything again; tests kill
processes with SIGKILL between writes.
"""
