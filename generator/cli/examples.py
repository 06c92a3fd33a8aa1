"""`btp-gitops examples DIR`: write the bundled example sources to DIR, for the docs' commands.

The docs render `examples/btp-operator` and its siblings; from an installed wheel
`btp-gitops examples examples` puts them where those commands look.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.exit_codes import ExitCode
from btp_gitops.generator.io.example_files import write_examples


def run_examples(args: argparse.Namespace) -> int:
    written = write_examples(Path(args.directory), overwrite=args.overwrite)
    print(
        f"wrote {len(written.files)} files of {len(written.examples)} examples to {written.directory}: "
        + ", ".join(written.examples)
    )
    return ExitCode.OK


def add_examples_parser(commands: Any) -> None:
    examples = commands.add_parser(
        "examples", help="write the bundled example sources (the docs' examples/) to a directory"
    )
    examples.add_argument("directory", metavar="DIR", help="created if missing; e.g. `examples`")
    examples.add_argument(
        "--overwrite",
        action="store_true",
        help="replace example files DIR already holds (nothing is deleted)",
    )
    examples.set_defaults(handler=run_examples)
