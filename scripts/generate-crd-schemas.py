"""Generate src/btp_gitops/data/crd-schemas/ from the third-party CRDs that scripts/fetch-crds.sh pins.

    .venv/bin/python scripts/generate-crd-schemas.py            # (re)write the shipped schemas
    .venv/bin/python scripts/generate-crd-schemas.py --check    # exit 1 naming drifting files

`btp-gitops validate` knows the custom resource kinds btp-gitops emits (SHIPPED_KINDS) from these
files, offline and without `--crds`. For each kind this writes `<plural>.<group>.json`: compact,
key-sorted JSON of every served version's `openAPIV3Schema` without descriptions and CEL rules
(generator.manifests.crd_schemas.shipped_schema_document). SOURCES.md records each family's module,
version, go.sum checksum and licence; LICENSE-Apache-2.0.txt is the licence text they share.

The CRDs are read from the fetch cache ($BTP_GITOPS_CACHE_DIR, else $XDG_CACHE_HOME/btp-gitops,
else ~/.cache/btp-gitops: crds/<family>-<version>/), and the licences from the Go module cache
beside it (go/mod), both filled by `bash scripts/fetch-crds.sh`. Nothing is downloaded here: a
family whose cached pins differ from the script's is an error that says to run it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from btp_gitops.generator.manifests.crd_schemas import is_crd, shipped_schema_document

REPO_ROOT = Path(__file__).resolve().parents[1]
FETCH_SCRIPT = REPO_ROOT / "scripts" / "fetch-crds.sh"
DEFAULT_OUT = REPO_ROOT / "src" / "btp_gitops" / "data" / "crd-schemas"
SOURCES_FILE = "SOURCES.md"
LICENCE_FILE = "LICENSE-Apache-2.0.txt"

# The custom resource kinds btp-gitops writes into rendered repos, by fetch-crds.sh family, as
# (group, kind). Found in generator/domains, generator/transforms and generator/wiring/objects.py;
# tests/validate/test_shipped_schemas.py renders every example to prove nothing is missing.
SHIPPED_KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "cert-manager": (("cert-manager.io", "Certificate"), ("cert-manager.io", "Issuer")),
    "istio": (
        ("networking.istio.io", "DestinationRule"),
        ("networking.istio.io", "Gateway"),
        ("networking.istio.io", "VirtualService"),
    ),
    "gardener-cert": (("cert.gardener.cloud", "Certificate"), ("cert.gardener.cloud", "Issuer")),
    "gardener-dns": (("dns.gardener.cloud", "DNSEntry"),),
    "prometheus-operator": (("monitoring.coreos.com", "ServiceMonitor"),),
    "external-secrets": (("external-secrets.io", "ExternalSecret"), ("external-secrets.io", "SecretStore")),
    "argo-cd": (("argoproj.io", "Application"), ("argoproj.io", "ApplicationSet")),
    "flux": (("kustomize.toolkit.fluxcd.io", "Kustomization"), ("source.toolkit.fluxcd.io", "GitRepository")),
}

# sha256 of the whitespace-normalised terms of the Apache License 2.0 ("TERMS AND CONDITIONS FOR
# USE, ..." up to "END OF TERMS AND CONDITIONS"): a LICENSE file is Apache-2.0 when its terms
# hash to this, whatever its line breaks, header and appendix.
APACHE_2_TERMS_SHA256 = "efc42672d5e2255417ab2bbcef2a39e8400f0ab6d32f4c790d95a3640087923c"
_TERMS = re.compile(
    r"TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION.*?(?=END OF TERMS AND CONDITIONS)", re.S
)

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class GenerateError(Exception):
    pass


@dataclass(frozen=True)
class ModulePin:
    """One SOURCES entry of fetch-crds.sh: a module version, its h1: checksum and the files used."""

    module: str
    version: str
    checksum: str
    files: tuple[str, ...]

    @property
    def line(self) -> str:
        """The entry as fetch-crds.sh writes it into a cached family's .pins file."""
        return " ".join((f"{self.module}@{self.version}", self.checksum, *self.files))


@dataclass(frozen=True)
class Licence:
    spdx: str
    file_sha256: str
    text: str
    notice: str | None  # the module's NOTICE file, which Apache-2.0 section 4(d) asks to pass on


def cache_dir() -> Path:
    """The same directory fetch-crds.sh uses."""
    if os.environ.get("BTP_GITOPS_CACHE_DIR"):
        return Path(os.environ["BTP_GITOPS_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "btp-gitops"


def read_pins(script: Path = FETCH_SCRIPT) -> dict[str, list[ModulePin]]:
    """The SOURCES entries of fetch-crds.sh, by family, in its order."""
    text = script.read_text(encoding="utf-8")
    block = re.search(r"^SOURCES=\((.*?)^\)", text, re.S | re.M)
    if block is None:
        raise GenerateError(f"{script}: no SOURCES=( ... ) block")
    lines = [line for line in block[1].splitlines() if not line.strip().startswith("#")]
    pins: dict[str, list[ModulePin]] = {}
    for entry in re.findall(r'"([^"]*)"', "\n".join(lines)):
        family, module_version, checksum, *files = entry.split()
        module, _, version = module_version.partition("@")
        if not (version and checksum.startswith("h1:") and files):
            raise GenerateError(f"{script}: cannot read the SOURCES entry {entry.split()[:2]}")
        pins.setdefault(family, []).append(ModulePin(module, version, checksum, tuple(files)))
    return pins


def family_version(pins: Iterable[ModulePin]) -> str:
    """fetch-crds.sh's cache key: the family's distinct module versions joined by '_'."""
    return "_".join(dict.fromkeys(pin.version for pin in pins))


def escape_module_path(module: str) -> str:
    """The Go module cache's spelling of a module path: an upper-case letter becomes '!' + lower."""
    return re.sub(r"[A-Z]", lambda match: "!" + match[0].lower(), module)


def read_licence(module_dir: Path) -> Licence:
    path = module_dir / "LICENSE"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GenerateError(
            f"cannot read {path}: {error.strerror or error} (the Go module cache lost it: "
            "delete the family's directory under crds/ in the cache and run `bash scripts/fetch-crds.sh`)"
        ) from error
    terms = _TERMS.search(text)
    normalised = " ".join(terms[0].split()) if terms else ""
    if hashlib.sha256(normalised.encode()).hexdigest() != APACHE_2_TERMS_SHA256:
        raise GenerateError(f"{path}: not the Apache License 2.0; check the licence before shipping its CRDs")
    notice_path = module_dir / "NOTICE"
    notice = notice_path.read_text(encoding="utf-8").strip() if notice_path.is_file() else None
    return Licence("Apache-2.0", hashlib.sha256(text.encode()).hexdigest(), text, notice)


@dataclass
class Family:
    name: str
    version: str
    pins: list[ModulePin]
    licences: dict[str, Licence]  # by module@version
    documents: list[dict[str, Any]]  # shipped documents, in SHIPPED_KINDS order


def load_family(name: str, pins: list[ModulePin], cache: Path) -> Family:
    version = family_version(pins)
    directory = cache / "crds" / f"{name}-{version}"
    fetch = f"run `bash scripts/fetch-crds.sh {name}` from {REPO_ROOT}"
    pins_file = directory / ".pins"
    if not pins_file.is_file():
        raise GenerateError(f"{name} {version} is not fetched into {directory}: {fetch}")
    if pins_file.read_text(encoding="utf-8").splitlines() != [pin.line for pin in pins]:
        raise GenerateError(f"{pins_file} does not hold the pins of {FETCH_SCRIPT.name}: {fetch}")

    found: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}
    licences: dict[str, Licence] = {}
    for pin in pins:
        licences[f"{pin.module}@{pin.version}"] = read_licence(
            cache / "go" / "mod" / f"{escape_module_path(pin.module)}@{pin.version}"
        )
        for file in pin.files:
            path = directory / Path(file).name
            for crd in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER):
                if is_crd(crd):
                    key = (crd["spec"]["group"], crd["spec"]["names"]["kind"])
                    found[key] = (crd, f"{pin.module}@{pin.version}/{file}")
    documents = []
    for group, kind in SHIPPED_KINDS[name]:
        if (group, kind) not in found:
            raise GenerateError(f"no CRD of {group} {kind} in the pinned files of {name} ({directory})")
        crd, source = found[(group, kind)]
        documents.append(shipped_schema_document(crd, source))
    return Family(name, version, pins, licences, documents)


def file_name(document: Mapping[str, Any]) -> str:
    return f"{document['plural']}.{document['group']}.json"


def compact_json(document: object) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def sources_markdown(families: list[Family]) -> str:
    lines = [
        "# Third-party CRD schemas shipped with btp-gitops",
        "",
        "Generated by `scripts/generate-crd-schemas.py` from the CRDs that `scripts/fetch-crds.sh` pins;",
        "do not edit. Each `<plural>.<group>.json` holds the served versions of one custom resource",
        "kind that btp-gitops emits: the CRD's `openAPIV3Schema` of each version with descriptions,",
        "titles, examples and CEL rules (`x-kubernetes-validations`) removed (offline validation does",
        "not use them), versions with identical schemas sharing one copy. `source` in each file names",
        "the module and file it was taken from. All modules are licensed under the Apache License 2.0",
        f"(their LICENSE files' terms verified by the script; the text is in `{LICENCE_FILE}`).",
        "",
        "| Family | Module | go.sum checksum | Licence (LICENSE sha256) | Kinds (served versions) |",
        "|---|---|---|---|---|",
    ]
    for family in families:
        kinds = ", ".join(
            f"{doc['group']} {doc['kind']} ({', '.join(v['name'] for v in doc['versions'])})"
            for doc in family.documents
        )
        for index, pin in enumerate(family.pins):
            licence = family.licences[f"{pin.module}@{pin.version}"]
            lines.append(
                f"| {family.name} {family.version} | `{pin.module}@{pin.version}` | `{pin.checksum}` "
                f"| {licence.spdx} (`{licence.file_sha256[:16]}`) | {kinds if index == 0 else '(same)'} |"
            )
    notices = [
        (module, licence.notice)
        for family in families
        for module, licence in family.licences.items()
        if licence.notice
    ]
    if notices:
        lines += ["", "## NOTICE files of these modules", ""]
        for module, notice in notices:
            lines += [f"`{module}`:", "", "```text", notice, "```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def generate(cache: Path) -> dict[str, str]:
    """Every file of the schema directory, by name."""
    pins = read_pins()
    missing = sorted(set(SHIPPED_KINDS) - set(pins))
    if missing:
        raise GenerateError(f"{FETCH_SCRIPT} pins no family {', '.join(missing)}")
    families = [load_family(name, pins[name], cache) for name in SHIPPED_KINDS]
    files = {file_name(doc): compact_json(doc) for family in families for doc in family.documents}
    files[SOURCES_FILE] = sources_markdown(families)
    files[LICENCE_FILE] = next(iter(families[0].licences.values())).text
    return dict(sorted(files.items()))


def drift(out: Path, files: Mapping[str, str]) -> list[str]:
    """What differs between `out` and `files`: '<name>: changed|missing|not generated'."""
    present = {path.name for path in out.iterdir() if path.is_file()} if out.is_dir() else set()
    problems = []
    for name in sorted(present | set(files)):
        if name not in files:
            problems.append(f"{name}: not generated (stale)")
        elif name not in present:
            problems.append(f"{name}: missing")
        elif (out / name).read_bytes() != files[name].encode():
            problems.append(f"{name}: changed")
    return problems


def write(out: Path, files: Mapping[str, str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for stale in sorted(out.iterdir()):
        if stale.is_file() and stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        target = out / name
        if not target.is_file() or target.read_bytes() != text.encode():
            temporary = target.with_name(f".{name}.tmp")
            temporary.write_bytes(text.encode())
            temporary.replace(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: as scripts/fetch-crds.sh")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if --out differs")
    args = parser.parse_args(argv)
    try:
        files = generate(args.cache_dir or cache_dir())
    except GenerateError as error:
        print(f"generate-crd-schemas: {error}", file=sys.stderr)
        return 2
    if args.check:
        problems = drift(args.out, files)
        for problem in problems:
            print(f"{args.out}/{problem}", file=sys.stderr)
        return 1 if problems else 0
    write(args.out, files)
    size = sum(len(text.encode()) for text in files.values())
    print(f"{len(files)} files, {size} bytes in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
