"""Limits on what an input can cost, tried for real through the CLI.

A "billion laughs" document in every place btp-gitops reads YAML (sources, values files, the
post-render stream, credentials, the maintenance policy, `validate` input) fails in well under a
second and a few MB with exit 3 naming the file and document; a device or FIFO named as a source
is refused without blocking; files and documents larger than Kubernetes would take are refused;
inputs that used to end in a Python traceback end in a clean input error instead.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.core.yaml_limits import MAX_ALIAS_NODES
from btp_gitops.generator.io.input_files import (
    MAX_FILE_BYTES,
    UnreadableInput,
    read_stream_text,
    spool_stream,
)
from tests.conftest import CLI, EXAMPLES, RunCli
from tests.render.conftest import MakeSource

# Each level multiplies by ten: ten levels would expand to 10**10 nodes ("lol" strings).
_LAUGHS = "\n".join(
    [
        '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 10)),
    ]
)
BILLION_LAUGHS_CONFIGMAP = f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: laughs
  namespace: default
data:
{_LAUGHS}
"""
BILLION_LAUGHS_VALUES = f"laughs:\n{_LAUGHS}\n"
ALIAS_MESSAGE = f"anchors and aliases expand beyond {MAX_ALIAS_NODES:,} nodes"

# Runs the CLI in a fresh interpreter and reports its own CPU time and peak RSS on the last stderr
# line: the cost of one command, not of the test process's other children, and CPU time rather
# than wall time, which a loaded machine stretches.
_MEASURED = """
import resource, sys
from btp_gitops.generator.cli import main
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
sys.stderr.flush()
print(f"\\nmeasured={usage.ru_utime + usage.ru_stime} {usage.ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def run_measured(
    *args: str | Path, stdin: str | None = None
) -> tuple[subprocess.CompletedProcess[str], float, int]:
    """(result, CPU seconds, peak RSS in MiB) of one CLI run; stderr without the measure line."""
    result = subprocess.run(
        [sys.executable, "-c", _MEASURED, *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    stderr, _, measured = result.stderr.rpartition("\nmeasured=")
    cpu, rss_kib = measured.split()
    result.stderr = stderr
    return result, float(cpu), int(rss_kib) // 1024


def _assert_fast_and_small(cpu: float, rss_mib: int) -> None:
    """Under a second of CPU and 100 MiB beyond what an empty run of the same command costs."""
    _, base_cpu, base_rss = run_measured("post-render", stdin="")
    assert cpu - base_cpu < 1.0, f"took {cpu:.2f} s of CPU (an empty run: {base_cpu:.2f} s)"
    assert rss_mib - base_rss < 100, f"peak RSS {rss_mib} MiB (an empty run: {base_rss} MiB)"


def test_billion_laughs_source_fails_fast(tmp_path: Path) -> None:
    source = tmp_path / "laughs.yaml"
    source.write_text(BILLION_LAUGHS_CONFIGMAP)
    result, cpu, rss = run_measured("render", source, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert f"laughs.yaml: document 1: invalid YAML: line 1, column 1: {ALIAS_MESSAGE}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()
    _assert_fast_and_small(cpu, rss)


def test_billion_laughs_stream_fails_fast() -> None:
    stream = f"---\n# Source: chart/templates/cm.yaml\n{BILLION_LAUGHS_CONFIGMAP}"
    result, cpu, rss = run_measured("post-render", stdin=stream)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert result.stdout == ""
    assert result.stderr == (
        "error: the manifest stream is not valid post-renderer input\n"
        "  <stdin>: document 1 (line 2, Source: chart/templates/cm.yaml): invalid YAML: line 3, column 1: "
        f'{ALIAS_MESSAGE} (the limit per file or stream; a "billion laughs" document?)\n'
    )
    _assert_fast_and_small(cpu, rss)


def test_aliases_are_counted_over_the_whole_stream() -> None:
    """Many documents each under the limit still add up: the budget is the stream's, not each one's."""
    level = '  l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    level += "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 5))
    # A custom kind: a ConfigMap's data must map strings to strings (core.object_shape).
    document = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w{n}\nspec:\n" + level
    per_document = 10**5  # about what the deepest level expands to
    count = MAX_ALIAS_NODES // per_document + 2
    stream = "".join(f"---\n{document.format(n=n)}" for n in range(count))
    result, _, _ = run_measured("post-render", stdin=stream)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert ALIAS_MESSAGE in result.stderr
    # the same documents one at a time are fine: aliases themselves are allowed
    single = run_measured("post-render", "--chart-version", "1.0.0", stdin=f"---\n{document.format(n=0)}")[0]
    assert single.returncode == 0, single.stderr


def test_cyclic_alias_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    source = tmp_path / "cycle.yaml"
    source.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: &d {a: *d}\n")
    result = run_cli("render", source, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert (
        "cycle.yaml: document 1: invalid YAML: line 4, column 7: an alias refers to a node that contains it"
        in (result.stderr)
    )


def test_billion_laughs_values_file_fails_fast(tmp_path: Path, make_source: MakeSource) -> None:
    source = make_source(chart={"valuesFiles": ["values.yaml"]})
    (source / "values.yaml").write_text(BILLION_LAUGHS_VALUES)
    sources = [source / "btpoperator.yaml", source / "btpoperatorconfig.yaml"]  # not values.yaml
    result, cpu, rss = run_measured("render", *sources, "--allow-path", source, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "error: invalid values file\n" in result.stderr
    assert f"values.yaml: invalid YAML: line 1, column 1: {ALIAS_MESSAGE}" in result.stderr
    _assert_fast_and_small(cpu, rss)


def test_billion_laughs_credentials_and_policy_and_validate(tmp_path: Path, run_cli: RunCli) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BILLION_LAUGHS_CONFIGMAP.replace("ConfigMap", "Secret"))
    credentials = run_cli("post-render", "--credentials", bomb)
    policy = run_cli(
        "render", EXAMPLES / "kyma-modules", "--maintenance-policy", bomb, "--out", tmp_path / "o"
    )
    validated = run_cli("validate", bomb)
    for result in (credentials, policy, validated):
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert "Traceback" not in result.stderr
        assert ALIAS_MESSAGE in result.stderr
        assert "bomb.yaml: document 1" in result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_source_is_refused(tmp_path: Path, run_cli: RunCli, device: str) -> None:
    result = run_cli("render", device, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert result.stderr == (
        "error: cannot read source documents (1 problem)\n"
        f"  {device}: not a regular file (a device, pipe or socket): only files are read\n"
    )


def test_a_fifo_as_source_or_values_file_does_not_block(tmp_path: Path, make_source: MakeSource) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    source = make_source(chart={"valuesFiles": [str(fifo)]})
    rendering = [
        "--allow-path",
        str(tmp_path),
        "--out",
        str(tmp_path / "out"),
    ]  # the FIFO is beside the source
    for args in (["render", fifo], ["render", source], ["post-render", "--credentials", fifo]):
        # nobody ever writes to the FIFO: a reader that opened it would wait for the timeout
        result = subprocess.run(
            [str(CLI), *map(str, args), *(rendering if args[0] == "render" else [])],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert "pipe.yaml: not a regular file (a device, pipe or socket)" in result.stderr


def test_a_file_over_the_limit_is_refused_unread(tmp_path: Path, run_cli: RunCli) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as file:
        file.truncate(MAX_FILE_BYTES + 1)  # sparse: refused from its size, never read
    result = run_cli("render", huge, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "huge.yaml: the file is too large (64.0 MiB, the limit is 64 MiB)" in result.stderr


def test_a_document_larger_than_kubernetes_takes_is_refused(tmp_path: Path, run_cli: RunCli) -> None:
    big = "x" * (3 * 1024 * 1024)
    document = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: {big}\n"
    source = tmp_path / "big.yaml"
    source.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: small\n---\n{document}")
    rendered = run_cli("render", source, "--out", tmp_path / "out")
    streamed = subprocess.run(
        [str(CLI), "post-render"], input=f"---\n{document}", capture_output=True, text=True, check=False
    )
    for result in (rendered, streamed):
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert "the document is 3.0 MiB, larger than the 3 MiB Kubernetes accepts for one object" in (
            result.stderr
        )
    assert "big.yaml: document 2: invalid YAML: line 6, column 1" in rendered.stderr


def test_a_stream_over_its_limit_is_refused() -> None:
    class Endless:
        def read(self, size: int) -> bytes:
            return b"a" * size

    with pytest.raises(UnreadableInput, match=r"^the stream is too large \(the limit is 1 MiB\)$"):
        read_stream_text(Endless(), limit=1 << 20)  # type: ignore[arg-type]
    with pytest.raises(UnreadableInput, match=r"^the stream is too large \(the limit is 1 MiB\)$"):
        spool_stream(Endless(), limit=1 << 20)  # type: ignore[arg-type]


@pytest.mark.parametrize("offset", [0, 5, (1 << 20) - 1, 1 << 20, (1 << 20) + 3])
def test_the_spooled_stream_refuses_what_the_read_one_refuses(offset: int) -> None:
    """post-render spools stdin in chunks: a byte that is not UTF-8 is named at its offset in the
    stream, across chunk boundaries too, in the words of the whole read; valid text comes back."""
    broken = b"a" * offset + "\u00e9".encode()[:1] + b"tail"
    with pytest.raises(UnreadableInput) as whole:
        read_stream_text(io.BytesIO(broken))
    with pytest.raises(UnreadableInput) as spooled:
        spool_stream(io.BytesIO(broken))
    assert str(spooled.value) == str(whole.value) == f"not UTF-8 text (byte {offset})"
    valid = b"a" * offset + "\u00e9 tail".encode()
    with spool_stream(io.BytesIO(valid)) as spooled_file:
        assert spooled_file.read() == valid


ANNOTATED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: annotated
  annotations:
    a: {a}
    b: {b}
"""


def test_annotations_over_256_kib_are_refused(tmp_path: Path, run_cli: RunCli) -> None:
    over = ANNOTATED.format(a="x" * (128 * 1024), b="y" * (128 * 1024))  # keys push it over
    under = ANNOTATED.format(a="x" * (128 * 1024), b="y" * (128 * 1024 - 2))
    source = tmp_path / "annotated.yaml"
    # A kind the render reads: a ConfigMap among the sources is passed over, never read.
    source.write_text(
        over.replace("apiVersion: v1\nkind: ConfigMap", "apiVersion: sme.sap.com/v1alpha1\nkind: CAPTenant")
    )
    rendered = run_cli("render", source, "--out", tmp_path / "out")
    streamed = subprocess.run(
        [str(CLI), "post-render"], input=f"---\n{over}", capture_output=True, text=True, check=False
    )
    message = "metadata.annotations: 256 KiB in total: Kubernetes allows at most 256 KiB of annotations"
    for result in (rendered, streamed):
        assert result.returncode == ExitCode.INPUT, result.stderr
        assert message in result.stderr
    assert (
        "annotated.yaml: document 1 (CAPTenant annotated): metadata.annotations: 256 KiB" in rendered.stderr
    )
    fine = subprocess.run(
        [str(CLI), "post-render", "--chart-version", "1.0.0"],
        input=f"---\n{under}",
        capture_output=True,
        text=True,
        check=False,
    )
    assert fine.returncode == 0, fine.stderr


def test_non_utf8_values_file_is_an_input_error(
    tmp_path: Path, run_cli: RunCli, make_source: MakeSource
) -> None:
    source = make_source(chart={"valuesFiles": ["values.yaml"]})
    (source / "values.yaml").write_bytes(b"a: \xff\xfe\n")
    sources = [source / "btpoperator.yaml", source / "btpoperatorconfig.yaml"]
    result = run_cli("render", *sources, "--allow-path", source, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    shown = (source / "values.yaml").resolve()
    assert result.stderr == f"error: cannot read values file\n  {shown}: not UTF-8 text (byte 3)\n"
    assert "Traceback" not in result.stderr


def test_a_binary_file_in_the_output_is_no_crash(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "out"
    cap = tmp_path / "cap"
    shutil.copytree(EXAMPLES / "cap-app", cap)
    assert run_cli("render", cap, "--out", out).returncode == 0
    app = next(p for p in (out / "clusters" / "default").iterdir() if p.is_dir())
    rendered = sorted(p for p in app.iterdir() if p.name != "kustomization.yaml")
    # Files btp-gitops wrote, spoiled by hand: compared and replaced, never a crash.
    rendered[0].write_bytes(bytes(range(256)))
    rendered[1].write_text(BILLION_LAUGHS_CONFIGMAP)
    diffed = run_cli("diff", cap, "--against", out)
    assert diffed.returncode == 0, diffed.stderr
    assert rendered[0].name in diffed.stdout
    assert run_cli("render", cap, "--out", out).returncode == 0
    # A binary file someone else put there: named and kept, never a crash.
    (app / "blob.bin").write_bytes(bytes(range(256)))
    refused = run_cli("render", cap, "--out", out)
    assert refused.returncode == ExitCode.OUTPUT, refused.stderr
    assert "blob.bin: not written by btp-gitops" in refused.stderr
    assert (app / "blob.bin").read_bytes() == bytes(range(256))
    for result in (diffed, refused):
        assert "Traceback" not in result.stderr


def test_a_binary_file_in_module_resources_is_an_input_error(tmp_path: Path, run_cli: RunCli) -> None:
    out = tmp_path / "module-resources"
    assert run_cli("module-resources", "--out", out).returncode == 0
    (out / "delete" / "to-delete.yml").write_bytes(b"\xff\xfe\x00")
    result = run_cli("module-resources", "--out", out)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert result.stderr == (
        "error: cannot read the previous module resources\n"
        "  delete/to-delete.yml: not UTF-8 text (a file of --out): fix or remove it\n"
    )


def test_an_int_where_an_init_container_env_entry_should_be(tmp_path: Path, run_cli: RunCli) -> None:
    cap = tmp_path / "cap"
    shutil.copytree(EXAMPLES / "cap-app", cap)
    version = cap / "version-1.0.0.yaml"
    text = version.read_text()
    written = "        env:\n          - name: CDS_ENV\n            value: production\n"
    assert written in text
    version.write_text(
        text.replace(
            written,
            written + "        initContainers:\n          - name: init\n            image: busybox\n"
            "            env:\n              - 42\n",
            1,
        )
    )
    result = run_cli("render", cap, "--out", tmp_path / "out")
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert (
        "spec.workloads[0].deploymentDefinition.initContainers[0].env[0]: must be of type object, got integer"
    ) in result.stderr


def test_a_non_object_in_a_kept_kyma_app_is_named(tmp_path: Path, run_cli: RunCli) -> None:
    """skip-reconciliation keeps the previous render: a file there that is no object is named."""
    source = tmp_path / "source"
    shutil.copytree(EXAMPLES / "kyma-modules", source)
    repo = tmp_path / "repo"
    assert run_cli("render", source, "--out", repo).returncode == 0
    app = repo / "clusters/default/kyma-greeter"
    spoiled = sorted(p.name for p in app.iterdir() if p.name != "kustomization.yaml")[0]
    (app / spoiled).write_bytes(b"\xff\xfe just notes\n")  # a file of ours, spoiled by hand
    kyma = source / "kyma.yaml"
    body = yaml.safe_load(kyma.read_text())
    body["metadata"].setdefault("labels", {})["operator.kyma-project.io/skip-reconciliation"] = "true"
    kyma.write_text(yaml.safe_dump(body))
    result = run_cli("render", source, "--out", repo)
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert result.stderr == (
        "error: cannot keep app kyma-greeter as it was rendered before\n"
        f"  clusters/default/kyma-greeter/{spoiled}: not a Kubernetes object: fix or remove the file\n"
    )


def _nested(levels: int) -> str:
    return "{a: " * levels + "1" + "}" * levels


@pytest.mark.parametrize("command", ["render", "validate", "post-render"])
def test_deep_nesting_is_refused_before_it_recurses(tmp_path: Path, run_cli: RunCli, command: str) -> None:
    document = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  deep: {_nested(300)}\n"
    source = tmp_path / "deep.yaml"
    source.write_text(document)
    if command == "post-render":
        result = subprocess.run(
            [str(CLI), "post-render"], input=f"---\n{document}", capture_output=True, text=True, check=False
        )
    else:
        result = run_cli(command, source, *(["--out", tmp_path / "out"] if command == "render" else []))
    assert result.returncode == ExitCode.INPUT, result.stderr
    assert "invalid YAML: line 6, column 510: nested deeper than 128 levels (mappings and lists)" in (
        result.stderr.replace("line 7,", "line 6,")  # post-render counts the `---` line
    )
    assert "Traceback" not in result.stderr
