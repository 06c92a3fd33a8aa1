"""Benchmark: start-up (`btp-gitops --version`, `post-render < /dev/null`) and `module-resources`
against BTP Manager's way of making the same artifact (a bash script: helm template + yq).

    .venv/bin/python -m bench.startup [--repeat 7] [--no-script]

Every figure is a fresh child process measured from outside: CPU is the child's user + system time
(with its own children: helm and every yq for the script; `wait4`), wall from start to exit, peak
RSS the largest process's (GNU time's %M, /usr/bin/time). The cases run interleaved, one round
after another, and each figure is the median of --repeat rounds; the load average is printed with
them (the machine is shared).

- floors: `python -c pass` and `python -c 'import yaml'`, the least any Python command costs;
- `btp-gitops --version` and `btp-gitops post-render < /dev/null`: goal <= 0.15 s CPU and
  <= 30 MiB peak RSS each (issue #22: Helm runs post-render on every install);
- `btp-gitops module-resources` on the SAP BTP operator chart (embedded Helm engine) against
  bench/btp_manager_module_resources.sh (helm3 + yq, built on demand by scripts/build-tools.sh),
  with the same overrides (bench/module_resources_overrides.yaml) and the same previous release
  (bench/module_resources_previous.yaml, rendered once by btp-gitops, so that to-delete lists
  something): goal >= 5x faster in wall time. Both outputs are checked to hold the same objects,
  file by file, before anything is timed; `helm template` alone is shown for reference.
  `--no-script` leaves the script out (and with it yq, which no test needs: the suite's smoke test
  of this benchmark runs so, and CI builds no tool for a benchmark alone).

The children run without PYTHONDONTWRITEBYTECODE, after one warm-up run each, so Python reads its
bytecode cache as an installed btp-gitops does (pip compiles it at install).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "btp-gitops"
CHART = ROOT / "charts" / "sap-btp-operator"
PEER = ROOT / "bench" / "btp_manager_module_resources.sh"
OVERRIDES = ROOT / "bench" / "module_resources_overrides.yaml"
PREVIOUS = ROOT / "bench" / "module_resources_previous.yaml"
TAG = "v1.0.0"  # the release tag (Helm's release name), as BTP Manager's CI passes it
PREVIOUS_TAG = "v0.9.0"

START_CPU_GOAL = 0.15  # seconds
START_RSS_GOAL = 30.0  # MiB
MODULE_RESOURCES_GOAL = 5.0  # times faster in wall time
SCRIPT = "helm+yq script (BTP Manager's way)"
GNU_TIME = "/usr/bin/time"  # GNU time (Debian package `time`): the peak RSS of one child


@dataclass(frozen=True, slots=True)
class Sample:
    cpu: float  # user + system seconds of the child and its children (and of GNU time, ~1 ms)
    wall: float
    rss_mib: float
    said: str = ""  # the child's stderr


def tools_bin() -> Path:
    """scripts/build-tools.sh's cache (see its header)."""
    cache = os.environ.get("BTP_GITOPS_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "btp-gitops"
    )
    return Path(cache) / "tools" / "bin"


def tool(name: str) -> Path:
    """A Go-built tool, built by scripts/build-tools.sh when missing (yq is built only when asked)."""
    path = tools_bin() / name
    if not path.exists():
        print(f"building {name} with scripts/build-tools.sh (once; cached per user)", flush=True)
        subprocess.run(["bash", str(ROOT / "scripts" / "build-tools.sh"), name], check=True)
    return path


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # read (and on the warm-up, write) the bytecode cache
    return env


def measure(argv: list[str], stdin: Path | None = None) -> Sample:
    """One run of `argv`, under GNU time for the peak RSS: the child of a process this size would
    inherit its high-water mark (it survives exec), GNU time's own children start small."""
    with tempfile.NamedTemporaryFile("r") as rss, open(stdin or os.devnull, "rb") as given:
        start = time.perf_counter()
        process = subprocess.Popen(
            [GNU_TIME, "-f", "%M", "-o", rss.name, *argv],
            stdin=given,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=child_env(),
        )
        assert process.stderr is not None
        errors = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)  # GNU time's usage includes its child's
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        peak_kib = rss.read().strip().splitlines()[-1] if code == 0 else "0"
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({code}):\n{errors.decode(errors='replace')}")
    said = errors.decode(errors="replace")
    return Sample(usage.ru_utime + usage.ru_stime, wall, int(peak_kib) / 1024, said)


class ModuleResourcesCase:
    """One maker of module-resources/: each run starts from a fresh copy of the previous release."""

    def __init__(self, work: Path, name: str, command: Callable[[Path], list[str]], previous: Path) -> None:
        self.out = work / name / "module-resources"
        self.command = command
        self.previous = previous

    def __call__(self) -> Sample:
        shutil.rmtree(self.out.parent, ignore_errors=True)
        shutil.copytree(self.previous.parent, self.out.parent, symlinks=True)
        return measure(self.command(self.out))


def objects_by_file(tree: Path) -> dict[str, list[Any]]:
    """Every file of an artifact but our release record, as the objects it holds."""
    return {
        path.relative_to(tree).as_posix(): [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        for path in sorted(tree.rglob("*"))
        if path.is_file() and path.name != ".release.yml"
    }


def same_objects(ours: Path, peer: Path) -> list[str]:
    """What differs between the two artifacts (files, or objects of a file); empty when nothing."""
    mine, theirs = objects_by_file(ours), objects_by_file(peer)
    problems = [f"{name}: only in btp-gitops's" for name in sorted(mine.keys() - theirs.keys())]
    problems += [f"{name}: only in the script's" for name in sorted(theirs.keys() - mine.keys())]
    problems += [
        f"{name}: different objects"
        for name in sorted(mine.keys() & theirs.keys())
        if mine[name] != theirs[name]
    ]
    return problems


def median(samples: list[Sample], field: str) -> float:
    values: list[float] = [getattr(sample, field) for sample in samples]
    return statistics.median(values)


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--repeat", type=int, default=7, help="rounds; each figure is their median (default 7)"
    )
    parser.add_argument(
        "--no-script",
        action="store_true",
        help="leave out BTP Manager's helm+yq script (and the yq it needs, built on demand otherwise)",
    )
    args = parser.parse_args()
    helm = tool("helm3")
    yq = None if args.no_script else tool("yq")
    python = sys.executable
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        previous = work / "previous" / "module-resources"
        subprocess.run(
            [
                str(CLI),
                "module-resources",
                "--chart",
                str(CHART),
                "--values",
                str(PREVIOUS),
                "--release",
                PREVIOUS_TAG,
                "--out",
                str(previous),
            ],
            check=True,
            capture_output=True,
            env=child_env(),
        )
        ours = ModuleResourcesCase(
            work,
            "btp-gitops",
            lambda out: [
                str(CLI),
                "module-resources",
                "--chart",
                str(CHART),
                "--values",
                str(OVERRIDES),
                "--release",
                TAG,
                "--out",
                str(out),
            ],
            previous,
        )
        peer = None
        if yq is not None:
            script = [str(PEER), str(helm), str(yq), str(CHART), str(OVERRIDES), TAG]
            peer = ModuleResourcesCase(work, "script", lambda out: ["bash", *script, str(out)], previous)
        rendered = work / "helm-template"
        cases: dict[str, Callable[[], Sample]] = {
            "python -c pass": lambda: measure([python, "-c", "pass"]),
            "python -c 'import yaml'": lambda: measure([python, "-c", "import yaml"]),
            "btp-gitops --version": lambda: measure([str(CLI), "--version"]),
            # --allow-empty: an empty stream is refused otherwise (Helm would delete the release's
            # objects); the start-up path measured is the same.
            "btp-gitops post-render < /dev/null": lambda: measure([str(CLI), "post-render", "--allow-empty"]),
            "btp-gitops module-resources": ours,
            **({SCRIPT: peer} if peer is not None else {}),
            "helm template alone (reference)": lambda: measure(
                [
                    str(helm),
                    "template",
                    TAG,
                    str(CHART),
                    "--values",
                    str(OVERRIDES),
                    "--namespace",
                    "kyma-system",
                    "--output-dir",
                    str(rendered),
                ]
            ),
        }
        warm = {name: run() for name, run in cases.items()}  # bytecode and page cache; outputs to compare
        if peer is not None:
            problems = same_objects(ours.out, peer.out)
            if problems:
                print("module-resources: btp-gitops and the script disagree:\n  " + "\n  ".join(problems))
                return 1
        print(f"load average before: {load()}")
        if peer is not None:
            files = len(objects_by_file(ours.out))
            said = warm[SCRIPT].said.strip()
            aside = "(the release record aside)"
            print(f"module-resources outputs: the same objects in all {files} files {aside}")
            print(f"the script: {said} (one per question per document, as BTP Manager's asks)")
        samples: dict[str, list[Sample]] = {name: [] for name in cases}
        for _ in range(args.repeat):  # interleaved: every case once per round
            for name, run in cases.items():
                samples[name].append(run())
        print(f"load average after:  {load()}")
        print(f"median of {args.repeat} interleaved runs (CPU = user + sys of the child and its children)")
        print(f"  {'':38} {'CPU s':>7} {'wall s':>7} {'peak RSS MiB':>13}")
        for name, runs in samples.items():
            cpu, wall, rss = (median(runs, field) for field in ("cpu", "wall", "rss_mib"))
            print(f"  {name:38} {cpu:7.3f} {wall:7.3f} {rss:13.1f}")
        floor = median(samples["python -c 'import yaml'"], "cpu")
        print("goals")
        for name in ("btp-gitops --version", "btp-gitops post-render < /dev/null"):
            cpu, rss = median(samples[name], "cpu"), median(samples[name], "rss_mib")
            verdict = "meets" if cpu <= START_CPU_GOAL and rss <= START_RSS_GOAL else "MISSES"
            print(
                f"  {name}: {cpu:.3f} s CPU ({cpu / floor:.1f}x the import-yaml floor), {rss:.1f} MiB "
                f"(goal <= {START_CPU_GOAL} s, <= {START_RSS_GOAL:.0f} MiB: {verdict})"
            )
        if peer is None:
            print("  module-resources: the script was left out (--no-script)")
            return 0
        ratio = median(samples[SCRIPT], "wall") / median(samples["btp-gitops module-resources"], "wall")
        cpu_ratio = median(samples[SCRIPT], "cpu") / median(samples["btp-gitops module-resources"], "cpu")
        verdict = "meets" if ratio >= MODULE_RESOURCES_GOAL else "MISSES"
        print(
            f"  module-resources: {ratio:.1f}x faster than the script in wall time ({cpu_ratio:.1f}x in CPU) "
            f"(goal >= {MODULE_RESOURCES_GOAL:.0f}x: {verdict})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
