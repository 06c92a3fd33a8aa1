"""The conventions users bring from kubectl and Helm: no option abbreviations, help from the bare
command, camelCase keys in every JSON output, --quiet and --verbose, counters that count."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import CLI, EXAMPLES, ROOT, RunCli

BTP_OPERATOR = EXAMPLES / "btp-operator"


# --- no prefix abbreviations -------------------------------------------------------------------

# A prefix of one long option of each command: argparse would take it for the option by default.
ABBREVIATED = [
    ("render", "x", "--out", "repo", "--clust", "demo"),
    ("diff", "x", "--against", "main", "--new-clus"),
    ("validate", "x.yaml", "--kubernetes-v", "1.33"),
    ("crds", "--chec"),
    ("module-resources", "--relea", "x"),
    ("post-render", "--domai", "cap"),
    ("completion", "bash", "--he"),
    ("controller", "--lease-n", "x"),
]


@pytest.mark.parametrize("args", ABBREVIATED, ids=[a[0] for a in ABBREVIATED])
def test_an_abbreviated_option_is_refused_not_guessed(
    run_cli: RunCli, tmp_path: Path, args: tuple[str, ...]
) -> None:
    result = run_cli(*args, cwd=tmp_path)
    abbreviation = [a for a in args if a.startswith("--")][-1]
    assert result.returncode == 2, result.stderr
    assert f"unrecognized arguments: {abbreviation}" in result.stderr
    assert f'(did you mean "{abbreviation}' in result.stderr  # the option meant is named
    assert list(tmp_path.iterdir()) == []  # nothing written


# --- the bare command ---------------------------------------------------------------------------


def test_the_bare_command_prints_help_and_exits_0_as_kubectl_and_helm_do(run_cli: RunCli) -> None:
    result = run_cli()
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: btp-gitops ")
    listed = re.findall(r"^    (\S+)", result.stdout, re.MULTILINE)
    assert {"render", "diff", "validate", "crds", "module-resources", "post-render", "completion"} <= set(
        listed
    )
    assert result.stdout == run_cli("--help").stdout


# --- one style of JSON keys ---------------------------------------------------------------------

CAMEL_CASE = re.compile(r"[a-z][a-zA-Z0-9]*")


def keys(value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every key of a JSON document, with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{where}.{key}", key
            yield from keys(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from keys(item, f"{where}[{index}]")


def _json(result: subprocess.CompletedProcess[str], *codes: int) -> Any:
    assert result.returncode in codes, result.stderr
    return json.loads(result.stdout)


def test_every_json_output_has_camel_case_keys(run_cli: RunCli, tmp_path: Path) -> None:
    """Each command's JSON, with every list it can hold filled in, and the error documents."""
    repo, kyma = tmp_path / "repo", tmp_path / "kyma"
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 1\n"
    )
    outputs = {
        "render": _json(run_cli("render", BTP_OPERATOR, "--out", repo, "-o", "json"), 0),
        # Kymas, their modules, templates and resources, and a module problem (exit 9)
        "render kyma": _json(
            run_cli("render", EXAMPLES / "kyma-modules", "--out", kyma, "-o", "json", cwd=ROOT), 0
        ),
        "diff": _json(run_cli("diff", EXAMPLES / "cap-app", "--against", repo, "-o", "json", cwd=ROOT), 0),
        "validate": _json(run_cli("validate", tmp_path / "cm.yaml", "-o", "json"), 3),
        "crds": _json(run_cli("crds", "--out", tmp_path / "crds", "-o", "json"), 0),
        "crds --check": _json(run_cli("crds", "--out", tmp_path / "other", "--check", "-o", "json"), 1),
        "module-resources": _json(run_cli("module-resources", "--out", tmp_path / "mr", "-o", "json"), 0),
        "error": _json(run_cli("render", tmp_path / "none", "--out", repo, "-o", "json"), 3),
        "usage error": _json(run_cli("render", "--clust", "-o", "json"), 2),
    }
    assert outputs["render kyma"]["kymas"][0]["modules"]
    assert outputs["diff"]["changes"] and outputs["validate"]["problems"]
    assert outputs["crds --check"]["drifting"] and outputs["error"]["error"]["problems"]
    wrong = [
        f"{name}: {where}"
        for name, output in outputs.items()
        for where, key in keys(output)
        if not CAMEL_CASE.fullmatch(key)
    ]
    assert not wrong, "\n".join(wrong)


# --- --quiet and --verbose ----------------------------------------------------------------------


def test_quiet_prints_nothing_on_success_and_keeps_the_exit_code(run_cli: RunCli, tmp_path: Path) -> None:
    render = run_cli("render", BTP_OPERATOR, "--out", tmp_path / "repo", "--quiet")
    assert (render.returncode, render.stdout, render.stderr) == (0, "", "")  # its info note is left out
    assert (tmp_path / "repo" / "clusters" / "default" / "btp-operator").is_dir()
    diff = run_cli(
        "diff", EXAMPLES / "cap-app", "--against", tmp_path / "repo", "-q", "--exit-code", cwd=ROOT
    )
    assert (diff.returncode, diff.stdout) == (1, "")
    (tmp_path / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: 1\n"
    )
    validate = run_cli("validate", tmp_path / "cm.yaml", "-q")
    assert (validate.returncode, validate.stdout) == (3, "")
    assert "data.k" in validate.stderr  # problems are errors: still told
    crds = run_cli("crds", "--out", tmp_path / "crds", "--check", "-q")
    assert (crds.returncode, crds.stdout, crds.stderr) == (1, "", "")
    # -o json is what was asked for: printed even with --quiet
    as_json = run_cli("crds", "--out", tmp_path / "crds", "--check", "-q", "-o", "json")
    assert json.loads(as_json.stdout)["drifting"]


def test_verbose_names_every_file_and_logs_each_step(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("render", BTP_OPERATOR, "--out", tmp_path / "repo", "--verbose")
    assert result.returncode == 0, result.stderr
    written = sorted(
        p.relative_to(tmp_path / "repo/clusters/default").as_posix()
        for p in (tmp_path / "repo/clusters/default").rglob("*.yaml")
        if p.name != "kustomization.yaml"
    )
    listed = re.findall(r"^  \+ (\S+)$", result.stdout, re.MULTILINE)
    assert set(written) <= set(listed)
    steps = re.findall(r"^(.+?)(?:: (\d+)/(\d+))? \(\d+\.\d\ds\)$", result.stderr, re.MULTILINE)
    assert [s[0] for s in steps] == [
        "reading sources",
        "validating sources",
        "rendering",
        "writing apps",
        "writing the repo",
    ]
    assert ("reading sources", "2", "2") in steps
    crds = run_cli("crds", "--out", tmp_path / "crds", "-v")
    assert len(re.findall(r"^  \+ \S+\.yaml$", crds.stdout, re.MULTILINE)) == len(
        list((tmp_path / "crds").iterdir())
    )
    validate = run_cli("validate", tmp_path / "repo", "-v", cwd=tmp_path)
    assert re.search(
        r"^  repo/clusters/default/btp-operator/deployment-\S+\.yaml: 1 object$",
        validate.stdout,
        re.MULTILINE,
    )


def test_quiet_and_verbose_are_one_choice(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("validate", "x.yaml", "-q", "-v", cwd=tmp_path)
    assert result.returncode == 2
    assert "not allowed with argument" in result.stderr


def test_post_render_takes_quiet_and_verbose_but_no_output_format(run_cli: RunCli, tmp_path: Path) -> None:
    stream = "".join(
        f"---\n{doc}"
        for doc in [yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})]
    )
    verbose = subprocess.run(
        [str(CLI), "post-render", "--domain", "cap", "-v"],
        input=stream,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert verbose.returncode == 0, verbose.stderr
    assert "post-render --domain cap: 1 objects written, 0 of them added" in verbose.stderr
    refused = run_cli("post-render", "-o", "json", cwd=tmp_path)
    assert refused.returncode == 2


# --- progress counters --------------------------------------------------------------------------


def _terminal_render(source: Path, out: Path) -> str:
    """A render whose stderr is a terminal (outside CI): what the progress line drew."""
    leader, follower = pty.openpty()
    try:
        environment = {k: v for k, v in os.environ.items() if k != "CI"}
        subprocess.run(
            [str(CLI), "render", str(source), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            env=environment,
            check=True,
            timeout=300,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other side is closed: all read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def test_progress_never_shows_a_counter_of_nothing(tmp_path: Path) -> None:
    """An empty source directory: every step has zero items; the line names the steps, no `0/0`."""
    (tmp_path / "empty").mkdir()
    shown = _terminal_render(tmp_path / "empty", tmp_path / "repo")
    drawn = [line for line in shown.split("\r\033[K") if line]
    assert "reading sources" in drawn and "writing apps" in drawn
    assert not [line for line in drawn if re.search(r": 0(/0)?$", line)], drawn
