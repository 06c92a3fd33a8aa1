"""The parameters of the Argo CD plugin (argocd-cmp/plugin.yaml), read by `render --stdout
--argocd-parameters` in the plugin's generate command.

Argo CD hands an Application's `spec.source.plugin.parameters` to the generate command as JSON in
`ARGOCD_APP_PARAMETERS` (`[{"name": "catalog", "array": ["../catalog"]}, ...]`; only parameters
the Application sets, never the announced defaults) and mirrors them as `PARAM_<NAME>` variables,
whose names lose the difference between `-`, `.` and `_`; the JSON is read. Each parameter is one
`render` option: `PARAMETERS` below and the static announcement in plugin.yaml list the same names
(a test keeps them equal).

Whoever may edit an Application sets these, so they are checked like any input: only the known
names, each of its own shape; the paths must be relative and stay inside the repository Argo CD
checked out (the working directory is the app's directory in it, `ARGOCD_APP_SOURCE_PATH` says
where that is), so that a parameter never lets sources read a file of the sidecar into the output.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from btp_gitops.generator.core.errors import UsageError

PARAMETERS_ENV = "ARGOCD_APP_PARAMETERS"
SOURCE_PATH_ENV = "ARGOCD_APP_SOURCE_PATH"
_MAX_JSON = 256 * 1024
_MAX_VALUE = 4096


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str  # as the Application names it
    dest: str  # the render option's attribute
    shape: str  # "string", "array" (of strings) or "boolean" (a string "true" or "false")
    path: bool = False  # a path (or paths) relative to the app's directory, inside the repository


PARAMETERS = (
    Parameter("cluster", "cluster", "string"),
    Parameter("catalog", "catalog", "array", path=True),
    Parameter("maintenance-policy", "maintenance_policy", "string", path=True),
    Parameter("at", "at", "string"),
    Parameter("allow-path", "allow_path", "array", path=True),
    Parameter("validate", "validate", "boolean"),
    Parameter("kubernetes-version", "kubernetes_version", "string"),
)
_BY_NAME = {parameter.name: parameter for parameter in PARAMETERS}


def repository_root(cwd: Path, source_path: str | None) -> Path:
    """The checked-out repository: the working directory less the app's path in it."""
    if not source_path:
        return cwd
    parts = [p for p in PurePosixPath(source_path).parts if p not in (".", "/")]
    if ".." in parts or len(parts) > len(cwd.parts) - 1:
        raise UsageError(f"{SOURCE_PATH_ENV}={source_path!r}: not a path inside the repository")
    root = cwd
    for _ in parts:
        root = root.parent
    return root


def _contained(what: str, value: str, cwd: Path, root: Path) -> str:
    if PurePosixPath(value).is_absolute():
        raise UsageError(
            f"{what}: {value!r} is absolute; give a path relative to the app's directory, inside the "
            "repository"
        )
    resolved = (cwd / value).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise UsageError(f"{what}: {value!r} leads outside the repository Argo CD checked out")
    return value


def _contained_path(parameter: Parameter, value: str, cwd: Path, root: Path) -> str:
    return _contained(f"Argo CD parameter {parameter.name}", value, cwd, root)


# The render's path options, as the plugin's command line may carry them (the sources, and what the
# Application's BTP_GITOPS_ARGS add): attribute -> option name.
_PATH_OPTIONS = {
    "sources": "source",
    "catalog": "--catalog",
    "maintenance_policy": "--maintenance-policy",
    "allow_path": "--allow-path",
    "crds": "--crds",
}


# Options that name what btp-gitops itself trusts, not what it reads as input: refused in the
# plugin, whatever they name (option -> why).
_REFUSED_OPTIONS = {
    "helm_binary": (
        "--helm-binary",
        "charts render with the embedded Helm engine (a binary named here would run a file of the "
        "repository in the sidecar)",
    ),
    "schemas": (
        "--schemas",
        "sources are validated with the schemas btp-gitops ships (schemas from the repository "
        "would let its sources through unchecked)",
    ),
    "cache_dir": (
        "--cache-dir",
        "the render cache is the sidecar's own ($XDG_CACHE_HOME/btp-gitops/render, else "
        "~/.cache/btp-gitops/render); --no-cache renders without it (a cache directory named here "
        "could be one the repository holds, whose entries decide what a record renders into)",
    ),
}


# The build environment Argo CD gives a plugin's commands: which Application, and which of its
# sources (an Application may have several), is rendered.
_APPLICATION_ENV = ("ARGOCD_APP_NAMESPACE", "ARGOCD_APP_NAME", "ARGOCD_APP_SOURCE_REPO_URL", SOURCE_PATH_ENV)


def application_place(environ: Mapping[str, str]) -> str | None:
    """What the render pack is named after in the plugin instead of the working directory
    (io.render_pack.pack_name): Argo CD's CMP server unpacks the repository into a new temporary
    directory for every generate request, so a pack named after the directory would never be
    found again, and every refresh would render in full and write one more pack. The
    Application and its source stay the same from request to request. None without
    ARGOCD_APP_NAME (not run by Argo CD): the working directory, as for any render."""
    if not environ.get("ARGOCD_APP_NAME"):
        return None
    return "argocd\0" + "\0".join(environ.get(name, "") for name in _APPLICATION_ENV)


def contain_plugin_options(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """The plugin env (BTP_GITOPS_ARGS) is set by whoever may edit an Application, like the
    parameters: every path on the command line must stay inside the checked-out repository, and
    the options that name something btp-gitops trusts (a helm binary, its schemas, its cache)
    are refused. The default cache directory is used only when it lies outside the repository
    (the sidecar's home, not the checkout); else the render goes without a cache."""
    for dest, (option, why) in _REFUSED_OPTIONS.items():
        if getattr(args, dest, None):
            raise UsageError(f"{option} cannot be used in Argo CD's plugin: {why}")
    cwd = Path.cwd()
    root = repository_root(cwd, environ.get(SOURCE_PATH_ENV))
    for dest, option in _PATH_OPTIONS.items():
        given = getattr(args, dest, None)
        for value in given if isinstance(given, list) else [given] if given else []:
            _contained(f"Argo CD plugin, {option}", str(value), cwd, root)
    if hasattr(args, "no_cache") and not args.no_cache:
        # The cache's module (hashlib, importlib.metadata) is loaded in the plugin's mode only:
        # `render` names this module for its help text.
        from btp_gitops.generator.io.render_cache import default_cache_dir  # noqa: PLC0415

        cache = default_cache_dir(environ).resolve()
        if cache.is_relative_to(root.resolve()):
            args.no_cache = True  # the sidecar's home inside the checkout: no cache rather than the repo's


def _value(parameter: Parameter, entry: Mapping[str, object]) -> str | list[str] | bool:
    fields = {key for key in ("string", "array", "map") if key in entry}
    wanted = "array" if parameter.shape == "array" else "string"
    if fields != {wanted}:
        shape = "an array" if wanted == "array" else "a string"
        raise UsageError(f"Argo CD parameter {parameter.name}: give it as {shape}")
    raw = entry[wanted]
    items = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(item, str) and len(item) <= _MAX_VALUE and "\0" not in item for item in items):
        raise UsageError(
            f"Argo CD parameter {parameter.name}: every value must be a string of at most {_MAX_VALUE} "
            "characters"
        )
    if parameter.shape == "boolean":
        if raw not in ("true", "false"):
            raise UsageError(f"Argo CD parameter {parameter.name}: give true or false, not {raw!r}")
        return raw == "true"
    if parameter.shape == "array":
        return [str(item) for item in items]
    return str(raw)


def read_parameters(environ: Mapping[str, str]) -> dict[Parameter, str | list[str] | bool]:
    """The parameters the Application sets, checked against the announced ones."""
    text = environ.get(PARAMETERS_ENV, "")
    if not text.strip() or text.strip() == "null":
        return {}
    if len(text) > _MAX_JSON:
        raise UsageError(f"{PARAMETERS_ENV}: longer than {_MAX_JSON} characters")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"{PARAMETERS_ENV}: not JSON ({error.msg} at character {error.pos})") from None
    if not isinstance(entries, list):
        raise UsageError(f"{PARAMETERS_ENV}: not a list of parameters")
    found: dict[Parameter, str | list[str] | bool] = {}
    for index, entry in enumerate(entries):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise UsageError(f"{PARAMETERS_ENV}: entry {index + 1} has no name")
        parameter = _BY_NAME.get(name)
        if parameter is None:
            known = ", ".join(p.name for p in PARAMETERS)
            raise UsageError(f"Argo CD parameter {name[:100]!r} is not one of the plugin's: {known}")
        if parameter in found:
            raise UsageError(f"Argo CD parameter {name} is given twice")
        found[parameter] = _value(parameter, entry)
    return found


def apply_argocd_parameters(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> None:
    """Set the render options the Application's parameters name: a string or boolean parameter
    replaces the option (also one given in the plugin's BTP_GITOPS_ARGS), an array adds to it. An
    empty string leaves the option as it is (the UI sends one for a field left empty)."""
    environ = os.environ if environ is None else environ
    parameters = read_parameters(environ)
    contain_plugin_options(args, environ)
    args.pack_place = application_place(environ)
    if not parameters:
        return
    cwd = Path.cwd()
    root = repository_root(cwd, environ.get(SOURCE_PATH_ENV))

    def checked(parameter: Parameter, value: str) -> str:
        return _contained_path(parameter, value, cwd, root) if parameter.path else value

    for parameter, given in parameters.items():
        if isinstance(given, list):
            items = [checked(parameter, item) for item in given]
            setattr(args, parameter.dest, [*getattr(args, parameter.dest), *items])
        elif isinstance(given, str):
            if given:
                setattr(args, parameter.dest, checked(parameter, given))
        else:
            setattr(args, parameter.dest, given)
