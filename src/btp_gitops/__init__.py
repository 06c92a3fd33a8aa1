"""btp-gitops: GitOps rendering for SAP BTP workloads on Kubernetes.

One import namespace for the whole distribution, so nothing of ours can clash with another
package's `generator` or `controller`:

- `btp_gitops.generator`: renders sources into a GitOps repository, post-renders Helm streams
  (the repository's `generator/`);
- `btp_gitops.controller`: the reconcilers and the subscription server that need live state
  (the repository's `controller/`);
- `btp_gitops.data`: the files every install needs (`schemas/`, `charts/`, `module-resources/`),
  read through `btp_gitops.generator.io.bundled`.

`__version__` is the one place the version is written; pyproject.toml reads it, and a test keeps
the charts and the Helm plugin in step with it.
"""

__version__ = "0.1.0"
