"""`memvault model check`: ask the configured model endpoint one tiny structured question and
say what works (reachable, context size, tools or json_schema, time per token) and, in one
line, what to change."""

from __future__ import annotations

from dataclasses import asdict

import click

from .app import json_option, print_json


@click.group()
def model() -> None:
    """The model provider organize runs on."""


@model.command()
@click.option("--model", "name", default=None, metavar="NAME",
              help="openai or openai:MODEL (else model.provider and model.name in "
                   "memvault.toml).")
@json_option
@click.pass_context
def check(ctx: click.Context, name: str | None, as_json: bool) -> None:
    """Ask the model endpoint one tiny structured question; say what works and what to change.

    Exit 1 when organize could not use it as configured."""
    from ..base.config import load_config
    from ..models.check import check_lines, check_model
    from ..models.openai_compat import OpenAICompatProvider
    from ..models.spec import ProviderSpec, build_provider

    # Only memvault.toml is read: the server can be checked before anything is stored.
    config = load_config(ctx.find_root().obj["home"])
    spec = ProviderSpec.parse(config, name)
    provider = build_provider(config, spec)
    if not isinstance(provider, OpenAICompatProvider):
        message = (f"provider {spec.label}: runs in this process, no endpoint to check (set "
                   "model.provider = \"openai\" to use a model server; docs/local-models.md)")
        return print_json({"provider": spec.label, "line": message}) if as_json \
            else click.echo(message)
    result = check_model(provider)
    if as_json:
        print_json({**asdict(result), "seconds_per_token": result.seconds_per_token})
    else:
        for line in check_lines(result):
            click.echo(line)
    if not result.answered or result.server == "unreachable":
        ctx.exit(1)
