"""Who asks: the person behind a request to a shared gateway or web page.

The gateway's sign-in (runtime side) turns a validated access token into a `Caller`; the policy
side picks the configurations, user settings, chats, approvals and quotas that belong to it. One
type crosses that seam so neither side reads the other's token or store.
"""

from __future__ import annotations

from policy._dataclass import dataclass


@dataclass(frozen=True, slots=True)
class Caller:
    """A signed-in person as the identity provider names them.

    `subject` is the token's `sub` claim, unique per person at that issuer; `groups` are the
    values of the configured groups claim (empty when the token carries none). Neither is ever
    a secret, but records may carry a hash of the subject instead, as configured.
    """

    subject: str
    groups: frozenset[str] = frozenset()
