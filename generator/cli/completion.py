"""`btp-gitops completion bash|zsh|fish`: a shell completion script, made from the parser itself.

The script is static: every command and option of this installation (the controller's included,
when installed), the choices of options that have them (`--target`, `-o`), file names for the
values and arguments that have none. It is read from the argparse parser when the command runs, so
it never lags behind the options, and a TAB costs no Python start-up.

    source <(btp-gitops completion bash)                  # bash, in ~/.bashrc
    btp-gitops completion zsh >"${fpath[1]}/_btp-gitops"  # zsh
    btp-gitops completion fish >~/.config/fish/completions/btp-gitops.fish
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from btp_gitops.generator.core.exit_codes import ExitCode

SHELLS = ("bash", "zsh", "fish")
PROGRAM = "btp-gitops"


@dataclass(frozen=True, slots=True)
class Option:
    flags: tuple[str, ...]  # "-o", "--output"
    about: str
    takes_value: bool
    choices: tuple[str, ...] = ()
    repeatable: bool = False
    takes_path: bool = False  # its value is a file or directory: complete file names


# What the options' metavars call a path (the others, `--cluster NAME`, complete nothing).
_PATH_METAVARS = frozenset({"FILE", "DIR", "PATH", "REPO", "REF|DIR"})


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    about: str
    options: tuple[Option, ...]
    argument_choices: tuple[str, ...] = ()  # a positional argument's choices (`completion SHELL`)
    takes_files: bool = False  # positional arguments that are paths (`render SOURCE...`)


@dataclass(frozen=True, slots=True)
class Program:
    options: tuple[Option, ...]
    commands: tuple[Command, ...] = field(default=())


def _about(text: str | None) -> str:
    """A help text's first clause, at most 80 characters, in characters every shell's quoting takes
    as they are."""
    if not text or text == argparse.SUPPRESS:
        return ""
    first = re.split(r";|\. ", text, maxsplit=1)[0]
    words = re.sub(r"[^A-Za-z0-9 ,./<>_+=-]", "", first).split()
    about = ""
    for word in words:
        if len(about) + len(word) + 1 > 80:
            break
        about = f"{about} {word}" if about else word
    return about.rstrip(",")


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    found = []
    for action in parser._actions:  # argparse has no public walk of its options
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        found.append(
            Option(
                flags=tuple(action.option_strings),
                about=_about(action.help),
                takes_value=action.nargs != 0,
                choices=choices,
                repeatable=isinstance(action, argparse._AppendAction),
                takes_path=action.type is Path or action.metavar in _PATH_METAVARS,
            )
        )
    return tuple(found)


def program_of(parser: argparse.ArgumentParser) -> Program:
    """What completion needs to know of the parser: its commands, their options and arguments."""
    commands = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help for choice in action._choices_actions}
        for name, sub in action.choices.items():
            positionals = [a for a in sub._actions if not a.option_strings]
            choices = tuple(str(c) for a in positionals if a.choices for c in a.choices)
            commands.append(
                Command(
                    name=name,
                    about=_about(helps.get(name)),
                    options=_options(sub),
                    argument_choices=choices,
                    takes_files=any(not a.choices for a in positionals),
                )
            )
    return Program(_options(parser), tuple(commands))


# --- bash ----------------------------------------------------------------------------------------


def _words(items: Any) -> str:
    return " ".join(items)


def bash_script(program: Program) -> str:
    """A completion function for `complete -F`: commands, then each command's options, their choices,
    and file names where a path goes."""
    names = _words(c.name for c in program.commands)
    top_flags = _words(f for o in program.options for f in o.flags)
    cases = []
    for command in program.commands:
        value_cases = []
        for option in command.options:
            if not option.takes_value:
                continue
            pattern = "|".join(option.flags)
            if option.choices:
                complete = f'COMPREPLY=($(compgen -W "{_words(option.choices)}" -- "$cur"))'
            elif option.takes_path:
                complete = "_btp_gitops_files"
            else:
                complete = "COMPREPLY=()"  # a name or a number: nothing to offer
            value_cases.append(f"                {pattern}) {complete}; return ;;")
        flags = _words(f for o in command.options for f in o.flags)
        if command.argument_choices:
            argument = f'COMPREPLY=($(compgen -W "{_words(command.argument_choices)}" -- "$cur"))'
        elif command.takes_files:
            argument = "_btp_gitops_files"
        else:
            argument = "COMPREPLY=()"
        cases.append(
            f"        {command.name})\n"
            '            case "$prev" in\n'
            + "".join(f"{line}\n" for line in value_cases)
            + "            esac\n"
            '            if [[ "$cur" == -* ]]; then\n'
            f'                COMPREPLY=($(compgen -W "{flags}" -- "$cur"))\n'
            "            else\n"
            f"                {argument}\n"
            "            fi\n"
            "            ;;\n"
        )
    return (
        f"# bash completion for {PROGRAM}: source <({PROGRAM} completion bash)\n"
        "_btp_gitops_files() {\n"
        "    compopt -o filenames 2>/dev/null\n"
        '    COMPREPLY=($(compgen -f -- "$cur"))\n'
        "}\n"
        "\n"
        "_btp_gitops() {\n"
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" command="" i\n'
        "    COMPREPLY=()\n"
        "    # The command is the first word that is not an option (the top level's options take no value).\n"
        "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
        '        if [[ "${COMP_WORDS[i]}" != -* ]]; then\n'
        '            command="${COMP_WORDS[i]}"\n'
        "            break\n"
        "        fi\n"
        "    done\n"
        '    case "$command" in\n'
        '        "")\n'
        '            if [[ "$cur" == -* ]]; then\n'
        f'                COMPREPLY=($(compgen -W "{top_flags}" -- "$cur"))\n'
        "            else\n"
        f'                COMPREPLY=($(compgen -W "{names}" -- "$cur"))\n'
        "            fi\n"
        "            ;;\n" + "".join(cases) + "    esac\n"
        "}\n"
        "\n"
        f"complete -F _btp_gitops {PROGRAM}\n"
    )


# --- zsh -----------------------------------------------------------------------------------------


def _zsh_specs(option: Option) -> list[str]:
    if option.choices:
        value = f":{option.flags[-1].lstrip('-')}:({' '.join(option.choices)})"
    elif option.takes_path:
        value = f":{option.flags[-1].lstrip('-')}:_files"
    elif option.takes_value:
        value = f":{option.flags[-1].lstrip('-')}: "
    else:
        value = ""
    repeat = "*" if option.repeatable else ""
    return [f"'{repeat}{flag}[{option.about}]{value}'" for flag in option.flags]


def zsh_script(program: Program) -> str:
    """A `#compdef` function: _arguments for the top level, then for the command named."""
    described = "\n".join(f"        '{c.name}:{c.about}'" for c in program.commands)
    cases = []
    for command in program.commands:
        specs = [spec for option in command.options for spec in _zsh_specs(option)]
        if command.argument_choices:
            specs.append(f"'1:argument:({' '.join(command.argument_choices)})'")
        elif command.takes_files:
            specs.append("'*:file:_files'")
        body = " \\\n                ".join(specs)
        cases.append(
            f"            {command.name})\n                _arguments -s \\\n                {body}\n"
        )
        cases.append("                ;;\n")
    top = " \\\n        ".join(spec for option in program.options for spec in _zsh_specs(option))
    return (
        f"#compdef {PROGRAM}\n"
        f"# zsh completion for {PROGRAM}: save as _{PROGRAM} in a directory of $fpath\n"
        "\n"
        "_btp_gitops_commands() {\n"
        "    local -a commands\n"
        "    commands=(\n"
        f"{described}\n"
        "    )\n"
        f"    _describe -t commands '{PROGRAM} command' commands\n"
        "}\n"
        "\n"
        "_btp_gitops() {\n"
        "    local curcontext=$curcontext state line\n"
        "    typeset -A opt_args\n"
        "    _arguments -C \\\n"
        f"        {top} \\\n"
        "        '1: :_btp_gitops_commands' \\\n"
        "        '*:: :->args'\n"
        "    case $state in\n"
        "        args)\n"
        "            case $words[1] in\n" + "".join(cases) + "            esac\n"
        "            ;;\n"
        "    esac\n"
        "}\n"
        "\n"
        'if [ "$funcstack[1]" = "_btp_gitops" ]; then\n'
        '    _btp_gitops "$@"\n'
        "else\n"
        f"    compdef _btp_gitops {PROGRAM}\n"
        "fi\n"
    )


# --- fish ----------------------------------------------------------------------------------------


def _fish_flags(option: Option) -> str:
    parts = []
    for flag in option.flags:
        if flag.startswith("--"):
            parts.append(f"-l {flag[2:]}")
        else:
            parts.append(f"-s {flag[1:]}")
    return " ".join(parts)


def fish_script(program: Program) -> str:
    """`complete` lines: the commands while none is named, then each command's options."""
    names = " ".join(c.name for c in program.commands)
    lines = [
        f"# fish completion for {PROGRAM}: save as ~/.config/fish/completions/{PROGRAM}.fish",
        f"complete -c {PROGRAM} -f",
    ]
    for option in program.options:
        lines.append(
            f"complete -c {PROGRAM} -n 'not __fish_seen_subcommand_from {names}' "
            f"{_fish_flags(option)} -d '{option.about}'"
        )
    for command in program.commands:
        lines.append(
            f"complete -c {PROGRAM} -n 'not __fish_seen_subcommand_from {names}' -a {command.name} "
            f"-d '{command.about}'"
        )
    for command in program.commands:
        seen = f"-n '__fish_seen_subcommand_from {command.name}'"
        for option in command.options:
            value = ""
            if option.choices:
                value = f" -x -a '{' '.join(option.choices)}'"
            elif option.takes_path:
                value = " -r -F"
            elif option.takes_value:
                value = " -x"
            lines.append(f"complete -c {PROGRAM} {seen} {_fish_flags(option)}{value} -d '{option.about}'")
        if command.argument_choices:
            lines.append(f"complete -c {PROGRAM} {seen} -x -a '{' '.join(command.argument_choices)}'")
        elif command.takes_files:
            lines.append(f"complete -c {PROGRAM} {seen} -F")
    return "\n".join(lines) + "\n"


SCRIPTS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def run_completion(args: argparse.Namespace) -> int:
    # The whole parser, contributed commands included: what the user can type is what completes.
    from btp_gitops.generator.cli import build_parser  # noqa: PLC0415 - the package imports this module

    sys.stdout.write(SCRIPTS[args.shell](program_of(build_parser())))
    return ExitCode.OK


def add_completion_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Prints a script that completes btp-gitops's commands, options, their choices and "
        "file names. bash: `source <(btp-gitops completion bash)` (in ~/.bashrc); zsh: `btp-gitops "
        'completion zsh >"${fpath[1]}/_btp-gitops"`; fish: `btp-gitops completion fish '
        ">~/.config/fish/completions/btp-gitops.fish`. It prints a script, not a result: no -o/--output.",
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.set_defaults(handler=run_completion)
