"""The child process that renders charts: Helm's Go engine under the kernel's limits.

Started by io.helm_process, never imported by the CLI. It imports nothing of btp-gitops beyond
this module, so that its start stays cheap. Once the engine is loaded it lowers its own limits:
`RLIMIT_AS` to the address space the loaded engine holds plus the memory budget (Go reserves
~1.4 GiB it never touches as it starts; `RLIMIT_DATA` would not do: Go maps its heap over
reservations, which the kernel does not count as growth), `RLIMIT_FSIZE` (its stderr is a file),
and before each chart `RLIMIT_CPU` to the CPU time used so far plus the chart's budget (the kernel
then ends it with SIGXCPU, which neither Python nor a Go library intercepts).

Requests arrive on stdin, one JSON line each; replies leave on the original stdout as an 8-byte
length and a JSON body. Its stdout is pointed at stderr first, so nothing the engine prints can be
taken for a reply.

    exec-helm mode: the same limits for the `helm` CLI engine, then exec() the binary.
"""

from __future__ import annotations

import json
import math
import os
import resource
import struct
import sys
from typing import IO, Any

MIB = 1024 * 1024
EXIT_MEMORY = 86  # Python ran out of memory under RLIMIT_DATA (Go itself exits 2, "out of memory")
EXIT_NOT_RUN = 127  # exec-helm: the binary cannot be run
HEADER = struct.Struct(">Q")
# The address space a Go program such as helm reserves as it starts without using it, on top of
# which its memory budget counts: a Go 1.26 program holding 64 MiB of strings maps ~1.3 GiB; the
# embedded engine, Python included, ~1.4 GiB.
GO_RESERVATIONS = 1536 * MIB


def _lower(limit: int, soft: int, hard: int | None = None) -> None:
    _, current_hard = resource.getrlimit(limit)
    hard = soft if hard is None else hard
    if current_hard != resource.RLIM_INFINITY:
        hard, soft = min(hard, current_hard), min(soft, current_hard)
    resource.setrlimit(limit, (soft, hard))


def limit_process(address_space: int, file_mib: int) -> None:
    _lower(resource.RLIMIT_AS, address_space)
    _lower(resource.RLIMIT_FSIZE, file_mib * MIB)
    _lower(resource.RLIMIT_CORE, 0)  # an overrun is not worth a core file


def address_space_in_use() -> int:
    """The address space the process holds (VmSize). Where /proc is not mounted (a bare chroot;
    containers and hosts have it), an upper estimate instead: twice what Go reserves as it starts
    plus the most the process has held, so the engine still starts and the bound stays finite."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    held = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return 2 * GO_RESERVATIONS + held


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _render(helm_python: Any, request: dict[str, Any], output_bytes: int) -> dict[str, Any]:
    try:
        with helm_python.Chart.load(request["chart"]) as chart:
            metadata = chart.metadata
            rendered = chart.render(
                request["values"], name=request["release"], namespace=request["namespace"], is_install=True
            )
            crds = {f"{metadata['name']}/{crd['name']}": crd["data"] for crd in chart.crds}
    except helm_python.HelmChartLoadError as error:
        return {"error": "load", "message": str(error)}
    except helm_python.HelmError as error:
        return {"error": "render", "message": str(error)}
    size = sum(len(text.encode()) for text in [*rendered.values(), *crds.values()])
    if size > output_bytes:
        return {"error": "output", "message": f"{size} bytes"}
    return {"ok": {"metadata": metadata, "templates": rendered, "crds": crds}}


def serve(memory_mib: int, cpu_seconds: int, output_mib: int) -> None:
    replies: IO[bytes] = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import helm_python  # noqa: PLC0415 - the engine's own footprint is not the chart's

    limit_process(address_space_in_use() + memory_mib * MIB, output_mib)

    for line in sys.stdin.buffer:
        request = json.loads(line)
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = math.ceil(_cpu_used()) + cpu_seconds
        resource.setrlimit(
            resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)
        )
        body = json.dumps(_render(helm_python, request, output_mib * MIB)).encode()
        replies.write(HEADER.pack(len(body)) + body)
        replies.flush()


def exec_helm(memory_mib: int, cpu_seconds: int, output_mib: int, command: list[str]) -> None:
    """The `helm` CLI under the same limits. Go programs ignore SIGXCPU, so the hard CPU limit
    (one second later) ends it with SIGKILL; its stdout is a file, so RLIMIT_FSIZE caps the output."""
    limit_process(GO_RESERVATIONS + memory_mib * MIB, output_mib)
    _lower(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1)
    try:
        os.execvp(command[0], command)
    except OSError as error:
        sys.stderr.write(f"cannot run {command[0]}: {error.strerror}\n")
        os._exit(EXIT_NOT_RUN)


def main(argv: list[str]) -> None:
    mode, memory_mib, cpu_seconds, output_mib = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    try:
        if mode == "serve":
            serve(memory_mib, cpu_seconds, output_mib)
        else:
            exec_helm(memory_mib, cpu_seconds, output_mib, argv[4:])
    except MemoryError:
        os._exit(EXIT_MEMORY)
    except KeyboardInterrupt:
        os._exit(130)


if __name__ == "__main__":
    main(sys.argv[1:])
