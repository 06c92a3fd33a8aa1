"""A chart from the sources, tried as a hostile one would, through the installed CLI.

Schemas: Helm's JSON-schema library follows `$ref` (and `$schema`) to the network and the file
system; a chart whose `values.schema.json` (or a subchart's, packaged or not) refers outside itself
is refused with exit 4 before the engine loads it: no request reaches a local server that records
them, nothing of a file outside the roots reaches the output, and a JSON-pointer probe learns
nothing (a key that exists and one that does not give the same answer).

Limits: a template that allocates a gigabyte (`repeat`), one that grows as n² (`range` in
`range`), one that outputs more than allowed, one that outlasts the wall clock: each is ended by
the kernel's limits in the child process and refused with exit 4 naming the chart and the limit,
the previous output intact. The limits are set low here through their environment variables, and
the peak memory of the CLI's process tree is measured (wait4).

Templates' file access (`.Files.Get`, `.Files.Glob`) stays inside the chart; a symbolic link in a
chart that leaves the roots is refused (tests/render/test_containment.py::chart-holding-a-link).
"""

from __future__ import annotations

import http.server
import io
import json
import os
import shutil
import subprocess
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from btp_gitops.generator.core.exit_codes import ExitCode
from tests.conftest import CHART, CLI, EXAMPLES, read_tree

CANARY = f"canary-{uuid.uuid4().hex[:12]}"
CHART_IN_SOURCE = "src/.chart"


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mib: float  # the CLI's process tree (the rendering child included), from wait4


def run_measured(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> Measured:
    """The installed CLI, with its wall time and the peak RSS of it and its children."""
    with (cwd / ".stdout").open("w+") as stdout, (cwd / ".stderr").open("w+") as stderr:
        started = time.monotonic()
        process = subprocess.Popen(
            [str(CLI), *map(str, args)],
            cwd=cwd,
            stdout=stdout,
            stderr=stderr,
            env={**os.environ, **(env or {})},
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stdout.seek(0)
        stderr.seek(0)
        return Measured(process.returncode, stdout.read(), stderr.read(), seconds, usage.ru_maxrss / 1024)


def _source_with_chart(tmp_path: Path, values: dict[str, Any] | None = None) -> Path:
    """examples/btp-operator with a copy of the operator's chart inside the source (`.chart`)."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "btp-operator", source)
    shutil.copytree(CHART, source / ".chart")
    config_path = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"]["chart"] = {"path": ".chart", **({"values": values} if values else {})}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return source


def _add_to_schema(schema_file: Path, name: str, subschema: dict[str, Any]) -> None:
    schema = json.loads(schema_file.read_text())
    schema["properties"][name] = subschema
    schema_file.write_text(json.dumps(schema))


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[tuple[int, list[str]]]:
    """A local HTTP server that answers every GET with a schema and records the paths asked for."""
    requests: list[str] = []
    handler = type("Handler", (_Recorder,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], requests
    server.shutdown()
    server.server_close()


def _assert_refused_reference(result: Measured, reference: str, keyword: str = "$ref") -> None:
    assert result.returncode == ExitCode.CHART, result.stderr
    assert result.stderr.startswith(f"error: chart {CHART_IN_SOURCE} (requested by "), result.stderr
    # the reference as written (a long one cut to a prefix, as every quoted value in a message)
    assert f'{CHART_IN_SOURCE}/values.schema.json refers to "{reference[:16]}' in result.stderr
    assert f"(#/properties/probe/{keyword}): a schema may refer only to itself" in result.stderr
    assert "Traceback" not in result.stderr


# --- schema references -------------------------------------------------------------------------


@pytest.mark.parametrize("keyword", ["$ref", "$dynamicRef"])
def test_a_schema_reference_to_a_server_sends_no_request(
    tmp_path: Path, recording_server: tuple[int, list[str]], keyword: str
) -> None:
    port, requests = recording_server
    source = _source_with_chart(tmp_path)
    reference = f"http://127.0.0.1:{port}/x.json"
    _add_to_schema(source / ".chart" / "values.schema.json", "probe", {keyword: reference})
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    assert requests == []
    _assert_refused_reference(result, reference, keyword)
    assert not (tmp_path / "out").exists()


def test_a_meta_schema_on_a_server_is_not_fetched(
    tmp_path: Path, recording_server: tuple[int, list[str]]
) -> None:
    port, requests = recording_server
    source = _source_with_chart(tmp_path)
    schema_file = source / ".chart" / "values.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["$schema"] = f"http://127.0.0.1:{port}/meta.json"
    schema_file.write_text(json.dumps(schema))
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    assert requests == []
    assert result.returncode == ExitCode.CHART, result.stderr
    assert f'{CHART_IN_SOURCE}/values.schema.json names the meta-schema "http://' in result.stderr
    assert "(#/$schema): only the JSON-schema drafts built into Helm are allowed" in result.stderr


def test_a_file_reference_reads_nothing(tmp_path: Path) -> None:
    """Helm read the file and put its first character into the error; now nothing of it shows."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{CANARY}\n")
    source = _source_with_chart(tmp_path)
    reference = f"file://{outside}/secret.txt"
    _add_to_schema(source / ".chart" / "values.schema.json", "probe", {"$ref": reference})
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    _assert_refused_reference(result, reference)
    assert "invalid character" not in result.stderr  # what Helm said about the file's first byte
    assert CANARY not in result.stdout + result.stderr


def test_a_json_pointer_cannot_probe_a_file_outside_the_roots(tmp_path: Path) -> None:
    """A pointer to a key that exists and to one that does not: the same refusal, so the chart
    learns nothing of the file (Helm validated against the first and failed on the second)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"token": {"type": "object"}}))
    answers = []
    for key in ("token", "nokey"):  # names of one length: a message cuts a long value alike
        work = tmp_path / key
        work.mkdir()
        source = _source_with_chart(work)
        reference = f"file://{outside}/config.json#/{key}"
        _add_to_schema(source / ".chart" / "values.schema.json", "probe", {"$ref": reference})
        result = run_measured("render", "src", "--out", "out", cwd=work)
        _assert_refused_reference(result, reference)
        answers.append(result.stderr.replace(key, "KEY"))
    assert answers[0] == answers[1]


def test_a_relative_reference_is_refused(tmp_path: Path) -> None:
    """Helm resolves `defs.json` against file:///values.schema.json: the root of the file system,
    not the chart, so even a file next to the schema is outside."""
    source = _source_with_chart(tmp_path)
    (source / ".chart" / "defs.json").write_text('{"type": "string"}')
    _add_to_schema(source / ".chart" / "values.schema.json", "probe", {"$ref": "defs.json"})
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    _assert_refused_reference(result, "defs.json")


def _packaged_subchart(schema: dict[str, Any]) -> bytes:
    """A chart archive `sub-0.1.0.tgz` whose schema is `schema`, as `helm package` lays it out."""
    files = {
        "sub/Chart.yaml": b"apiVersion: v2\nname: sub\nversion: 0.1.0\n",
        "sub/values.yaml": b"{}\n",
        "sub/values.schema.json": json.dumps(schema).encode(),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(data)
            archive.addfile(member, io.BytesIO(data))
    return buffer.getvalue()


def test_a_packaged_subchart_is_checked_too(tmp_path: Path, recording_server: tuple[int, list[str]]) -> None:
    port, requests = recording_server
    source = _source_with_chart(tmp_path)
    reference = f"http://127.0.0.1:{port}/sub.json"
    chart_yaml = source / ".chart" / "Chart.yaml"
    chart_yaml.write_text(chart_yaml.read_text() + "dependencies:\n  - name: sub\n    version: 0.1.0\n")
    (source / ".chart" / "charts").mkdir()
    archive = _packaged_subchart({"properties": {"probe": {"$ref": reference}}})
    (source / ".chart" / "charts" / "sub-0.1.0.tgz").write_bytes(archive)
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    assert requests == []
    assert result.returncode == ExitCode.CHART, result.stderr
    assert f'{CHART_IN_SOURCE}/charts/sub-0.1.0.tgz:values.schema.json refers to "http://' in result.stderr


def test_references_inside_the_schema_and_the_drafts_still_render(tmp_path: Path) -> None:
    """The control: fragments, a `$ref` inside a default value (data, not a reference) and each
    draft's meta-schema render (the machine has no network: a fetch would fail the render)."""
    source = _source_with_chart(tmp_path)
    schema_file = source / ".chart" / "values.schema.json"
    schema = json.loads(schema_file.read_text())
    schema["definitions"] = {"text": {"type": "string"}}
    schema["properties"]["probe"] = {"$ref": "#/definitions/text", "default": {"$ref": "http://x/"}}
    for meta in ("http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema"):
        schema["$schema"] = meta
        schema_file.write_text(json.dumps(schema))
        result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
        assert result.returncode == 0, result.stderr


# --- templates' file access ----------------------------------------------------------------------


def test_templates_read_only_the_chart_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(CANARY)
    source = _source_with_chart(tmp_path)
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: files}\ndata:\n"
        '  up: {{ .Files.Get "../../outside.txt" | quote }}\n'
        f'  absolute: {{{{ .Files.Get "{outside}" | quote }}}}\n'
        '  glob: {{ range $path, $_ := .Files.Glob "../**" }}{{ $path }}{{ end }}\n'
    )
    (source / ".chart" / "templates" / "files.yaml").write_text(template)
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rendered = b"".join(read_tree(tmp_path / "out").values())
    assert b"name: files" in rendered
    assert CANARY.encode() not in rendered


# --- limits --------------------------------------------------------------------------------------

BOMB = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\ndata:\n  x: %s\n"
REPEAT = '{{ repeat (int .Values.size) "xxxxxxxxxxxxxxxx" | quote }}'
NESTED_RANGE = (
    '"{{ range until (int .Values.size) }}{{ range until (int $.Values.size) }}x{{ end }}{{ end }}"'
)


def _bomb(tmp_path: Path, body: str, size: int) -> None:
    """Render the source once as it is, then give its chart the bomb (the output must stay)."""
    source = _source_with_chart(tmp_path)
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (source / ".chart" / "values.schema.json").unlink()  # it allows no value `size`
    (source / ".chart" / "templates" / "bomb.yaml").write_text(BOMB % body)
    config_path = source / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"]["chart"]["values"] = {"size": size}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def _assert_limit(tmp_path: Path, result: Measured, before: dict[str, bytes], limit: str) -> None:
    assert result.returncode == ExitCode.CHART, result.stderr
    assert result.stderr.startswith(f"error: chart {CHART_IN_SOURCE} (requested by "), result.stderr
    assert result.stderr.rstrip().endswith(limit), result.stderr
    assert "Traceback" not in result.stderr and "goroutine" not in result.stderr
    assert read_tree(tmp_path / "out") == before
    print(f"{limit}: {result.seconds:.1f} s, peak RSS {result.peak_rss_mib:.0f} MiB")  # the figures


def test_a_repeat_bomb_is_ended_by_the_memory_limit(tmp_path: Path) -> None:
    """`repeat` of 2^26 times 16 bytes (1 GiB): Helm used 12.7 GB for it; the limit is 256 MiB."""
    _bomb(tmp_path, REPEAT, 2**26)
    before = read_tree(tmp_path / "out")
    env = {"BTP_GITOPS_CHART_MEMORY_MIB": "256"}
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path, env=env)
    limit = "rendering used more than 256 MiB of memory (raise it with BTP_GITOPS_CHART_MEMORY_MIB)"
    _assert_limit(tmp_path, result, before, limit)
    assert result.peak_rss_mib < 256 + 200  # the engine's own ~100 MiB, and the CLI's
    assert result.seconds < 60


def test_a_nested_range_bomb_is_ended_by_the_cpu_limit(tmp_path: Path) -> None:
    """`range` in `range` of 20,000 each: 4 x 10^8 iterations; the CPU limit is 2 s."""
    _bomb(tmp_path, NESTED_RANGE, 20_000)
    before = read_tree(tmp_path / "out")
    env = {"BTP_GITOPS_CHART_CPU_SECONDS": "2"}
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path, env=env)
    limit = "rendering used more than 2 s of CPU (raise it with BTP_GITOPS_CHART_CPU_SECONDS)"
    _assert_limit(tmp_path, result, before, limit)
    assert result.peak_rss_mib < 1024 + 200
    assert result.seconds < 60


def test_a_slow_chart_is_ended_by_the_wall_clock(tmp_path: Path) -> None:
    _bomb(tmp_path, NESTED_RANGE, 20_000)
    before = read_tree(tmp_path / "out")
    env = {"BTP_GITOPS_CHART_TIMEOUT_SECONDS": "1"}
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path, env=env)
    limit = "rendering took more than 1 s (raise it with BTP_GITOPS_CHART_TIMEOUT_SECONDS)"
    _assert_limit(tmp_path, result, before, limit)


def test_a_large_output_is_refused(tmp_path: Path) -> None:
    """4 MiB of output under a 1 MiB cap (within the memory limit: the output check says so)."""
    _bomb(tmp_path, REPEAT, 2**18)
    before = read_tree(tmp_path / "out")
    env = {"BTP_GITOPS_CHART_OUTPUT_MIB": "1"}
    result = run_measured("render", "src", "--out", "out", cwd=tmp_path, env=env)
    limit = "rendering produced more than 1 MiB (raise it with BTP_GITOPS_CHART_OUTPUT_MIB)"
    _assert_limit(tmp_path, result, before, limit)


def test_a_limit_that_is_not_a_number_is_a_usage_error(tmp_path: Path) -> None:
    _source_with_chart(tmp_path)
    result = run_measured(
        "render", "src", "--out", "out", cwd=tmp_path, env={"BTP_GITOPS_CHART_CPU_SECONDS": "1e9"}
    )
    assert result.returncode == ExitCode.USAGE, result.stderr
    assert "BTP_GITOPS_CHART_CPU_SECONDS='1e9': expected a whole number from 1 to 1000000" in result.stderr
