"""The sign-in's errors."""

from __future__ import annotations

from policy import ToolPolicyError


class SignInUnavailable(ToolPolicyError):
    """The identity provider's metadata or keys cannot be had: no token can be checked now."""

    code = "sign-in-unavailable"
