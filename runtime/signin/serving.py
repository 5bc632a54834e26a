"""How a serving command chooses between the shared `--token` and the organization's sign-in."""

from __future__ import annotations

import click

from policy import Policy
from policy._runtime_seam import SignInSettings, require_token_beyond_loopback, sign_in_problems


def serving_sign_in(
    policy: Policy, host: str, token: str | None, variable: str, *, web: bool = False
) -> SignInSettings | None:
    """The sign-in a server listening on `host` starts with, or None for the shared token.

    With `DataGateway.Issuer` set, every request needs the identity provider's token, so a
    `--token` as well is refused (one of the two would be ignored); a `DataGateway.*` mistake
    stops the server rather than serving it open or for the wrong issuer. Without it, the shared
    token's rule holds: required beyond loopback. The web page (`web`) signs browsers in as the
    gateway's own client, so it needs `DataGateway.ClientId` and `ClientSecret` too."""
    problems = sign_in_problems(policy.configuration)
    if problems:
        raise click.ClickException(
            "the sign-in is configured wrongly, so nothing is served: " + "; ".join(problems)
        )
    settings = SignInSettings.of(policy.configuration)
    if settings is None:
        require_token_beyond_loopback(host, token, variable)
        return None
    if web and not (settings.client_id and settings.client_secret):
        raise click.ClickException(
            "the web page signs people in as the gateway's client at the identity provider: "
            "set DataGateway.ClientId and DataGateway.ClientSecret (nothing is served)"
        )
    if token:
        raise click.BadParameter(
            f"the organization's sign-in is configured (DataGateway.Issuer = {settings.issuer}); "
            f"every request presents its identity provider's token, so leave --token (and "
            f"{variable}) unset",
            param_hint="--token",
        )
    return settings
