"""`btp-gitops controller` and `btp-gitops subscription-server`, joined to the generator's CLI through
the `btp_gitops.commands` entry-point group (the generator never imports the controller)."""

from __future__ import annotations

from typing import Any


def register_commands(commands: Any) -> None:
    """Add the controller's subcommands to the `btp-gitops` argument parser."""
    # Imported here, not at the top: `btp-gitops render` should not pay for the controller's imports.
    from btp_gitops.controller.app import add_controller_command, add_subscription_server_command  # noqa: PLC0415

    add_controller_command(commands)
    add_subscription_server_command(commands)
