"""How much one chart may cost to render: memory, CPU time, wall-clock time and output size.

A chart's templates are a program (`repeat`, `range until`, recursion through `include`) and the
chart may come from a fork's pull request or from one team's application behind the Argo CD plugin,
whose sidecar every team shares. So both engines render in a child process the kernel holds to
these limits (`RLIMIT_AS`, `RLIMIT_CPU`), watched with a wall-clock deadline, and whose output is
refused past a size. A chart that overruns one is refused with exit 4, naming the chart and the
limit, and nothing is written.

The defaults are far above what real charts need (the SAP BTP service operator's chart: ~100 MiB
with the engine loaded, well under a second of CPU, 100 KiB of output); an administrator raises or
lowers them with the environment variables below (set on the Argo CD sidecar, not in an
Application: the plugin hands an Application's env to btp-gitops only with an ARGOCD_ENV_ prefix).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from btp_gitops.generator.core.errors import UsageError

MEMORY_ENV = "BTP_GITOPS_CHART_MEMORY_MIB"
CPU_ENV = "BTP_GITOPS_CHART_CPU_SECONDS"
TIMEOUT_ENV = "BTP_GITOPS_CHART_TIMEOUT_SECONDS"
OUTPUT_ENV = "BTP_GITOPS_CHART_OUTPUT_MIB"
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ChartLimits:
    memory_mib: int = 1024  # address space one render may add to the rendering process, beyond the engine
    cpu_seconds: int = 60  # CPU time of one chart's render (all threads)
    timeout_seconds: int = 120  # wall-clock time of one chart's render
    output_mib: int = 64  # the rendered templates and CRDs of one chart, together

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> ChartLimits:
        defaults = cls()
        return cls(
            memory_mib=_positive(environ, MEMORY_ENV, defaults.memory_mib, minimum=128),
            cpu_seconds=_positive(environ, CPU_ENV, defaults.cpu_seconds),
            timeout_seconds=_positive(environ, TIMEOUT_ENV, defaults.timeout_seconds),
            output_mib=_positive(environ, OUTPUT_ENV, defaults.output_mib),
        )

    def memory_message(self) -> str:
        return f"rendering used more than {self.memory_mib} MiB of memory (raise it with {MEMORY_ENV})"

    def cpu_message(self) -> str:
        return f"rendering used more than {self.cpu_seconds} s of CPU (raise it with {CPU_ENV})"

    def timeout_message(self) -> str:
        return f"rendering took more than {self.timeout_seconds} s (raise it with {TIMEOUT_ENV})"

    def output_message(self) -> str:
        return f"rendering produced more than {self.output_mib} MiB (raise it with {OUTPUT_ENV})"


def _positive(environ: Mapping[str, str], name: str, default: int, minimum: int = 1) -> int:
    text = environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not minimum <= int(text) <= 1_000_000:
        raise UsageError(f"{name}={text[:40]!r}: expected a whole number from {minimum} to 1000000")
    return int(text)
