"""`CONFIG["DATA_SOURCES"]`: the ERI v1 data sources semantic_search may search."""

from __future__ import annotations

from collections.abc import Mapping

from policy.config.fields import Field, FieldType, Section, UnknownFields
from policy.config.guid import GUID_SCHEMA_PATTERN
from policy.config.providers import ENCRYPTED_PATTERN
from policy.config.settings import LEVEL_NAMES
from policy.vocabulary import DataSecurity

_AUTH_METHODS: tuple[str, ...] = ("NONE", "KERBEROS", "USERNAME_PASSWORD", "TOKEN")
_OS_USERNAME_MODE = "OS_USERNAME_SHARED_PASSWORD"
_USERNAME_PASSWORD_MODES: tuple[str, ...] = ("SHARED_USERNAME_AND_PASSWORD", _OS_USERNAME_MODE)


DATA_SOURCES = Section(
    "DATA_SOURCES",
    "ERI v1 data sources; each becomes a `DataSourceConfig`.",
    (
        Field(
            "Id",
            FieldType.GUID,
            "The data source's id.",
            required=True,
            pattern=GUID_SCHEMA_PATTERN,
            example="6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f43",
        ),
        Field(
            "Name",
            FieldType.NONBLANK_TEXT,
            "The name users see.",
            required=True,
            example="Handbook",
        ),
        Field(
            "Type",
            FieldType.CHOICE,
            "The protocol: ERI v1.",
            required=True,
            choices=("ERI_V1",),
            example="ERI_V1",
        ),
        Field(
            "Hostname",
            FieldType.NONBLANK_TEXT,
            "The ERI server's address.",
            required=True,
            example="https://eri.example.org",
        ),
        Field(
            "Port",
            FieldType.WHOLE_NUMBER,
            "The ERI server's port.",
            required=True,
            minimum=1,
            maximum=65535,
            example=443,
        ),
        Field(
            "AuthMethod",
            FieldType.CHOICE,
            "How toolpolicy authenticates at the server.",
            required=True,
            choices=_AUTH_METHODS,
            example="NONE",
        ),
        Field(
            "SecurityPolicy",
            FieldType.CHOICE,
            "SELF_HOSTED: its data goes only to self-hosted or trusted providers.",
            required=True,
            choices=(DataSecurity.ALLOW_ANY.value, DataSecurity.SELF_HOSTED.value),
            example="SELF_HOSTED",
        ),
        Field(
            "SelectedRetrievalId",
            FieldType.NONBLANK_TEXT,
            "The server's retrieval process to use.",
            required=True,
            example="default",
        ),
        Field(
            "MaxMatches",
            FieldType.WHOLE_NUMBER,
            "At most this many matches per search.",
            required=True,
            minimum=1,
            maximum=65535,
            example=10,
        ),
        Field(
            "MinimumProviderConfidence",
            FieldType.CHOICE,
            "toolpolicy's own: the lowest provider confidence that may search it; its passages "
            "raise the chat's requirement to it (AI Studio ignores the field).",
            choices=LEVEL_NAMES,
            default="NONE",
            example="HIGH",
        ),
        Field(
            "UsernamePasswordMode",
            FieldType.CHOICE,
            "USERNAME_PASSWORD: whose user name is sent (OS_USERNAME_SHARED_PASSWORD: the "
            "operating-system user's, so a server answering people over the network never "
            "searches the entry).",
            required_when=(("AuthMethod", "USERNAME_PASSWORD"),),
            choices=_USERNAME_PASSWORD_MODES,
            example="SHARED_USERNAME_AND_PASSWORD",
        ),
        Field(
            "Username",
            FieldType.NONBLANK_TEXT,
            "SHARED_USERNAME_AND_PASSWORD: the user name.",
            required_when=(
                ("AuthMethod", "USERNAME_PASSWORD"),
                ("UsernamePasswordMode", "SHARED_USERNAME_AND_PASSWORD"),
            ),
            example="eri",
        ),
        Field(
            "Password",
            FieldType.SECRET,
            "USERNAME_PASSWORD: the password, an ENC:v1: value that decrypts.",
            required_when=(("AuthMethod", "USERNAME_PASSWORD"),),
            pattern=ENCRYPTED_PATTERN,
            example="ENC:v1:...",
        ),
        Field(
            "Token",
            FieldType.SECRET,
            "TOKEN: the token, an ENC:v1: value that decrypts.",
            required_when=(("AuthMethod", "TOKEN"),),
            pattern=ENCRYPTED_PATTERN,
            example="ENC:v1:...",
        ),
    ),
    fails_closed=False,
    unknown_fields=UnknownFields.NEAR_MISS_SKIPS,
)


def eri_client_problem(hostname: str, auth_method: str) -> str | None:
    """Why toolpolicy's ERI v1 client cannot search an entry with this `Hostname` and
    `AuthMethod` (it is then never offered), or None. `policy check` warns with it at the entry's
    line; the runtime refuses the entry with it, before anything is sent."""
    from policy.hosts import is_loopback_host, read_web_address, shown_address

    address = read_web_address(hostname.strip())
    if (
        address is None
        or address.host is None
        or address.has_user_info
        or address.has_query
        or address.has_fragment
    ):
        return (
            f"Hostname {shown_address(hostname)} is not an http(s) address such as "
            "https://eri.example.org (without user name, query or fragment)"
        )
    if auth_method == "KERBEROS":
        return "AuthMethod KERBEROS: signing in to an ERI server with Kerberos is not supported yet"
    carries_secret = auth_method in ("TOKEN", "USERNAME_PASSWORD")
    if carries_secret and address.scheme == "http" and not is_loopback_host(address.host):
        return (
            f"AuthMethod {auth_method} over plain http:// would send the secret across the network "
            "unencrypted; use an https:// Hostname (plain http only for this machine)"
        )
    return None


def sends_os_user_name(raw: Mapping[str, object]) -> bool:
    """Whether an entry signs in with the operating-system user name of the process searching
    (`AuthMethod` USERNAME_PASSWORD, `UsernamePasswordMode` OS_USERNAME_SHARED_PASSWORD, in any
    case, as the reader takes them)."""
    method, mode = raw.get("AuthMethod"), raw.get("UsernamePasswordMode")
    return (
        isinstance(method, str)
        and isinstance(mode, str)
        and method.strip().upper() == "USERNAME_PASSWORD"
        and mode.strip().upper() == _OS_USERNAME_MODE
    )


OS_USER_NAME_REFUSAL = (
    f"UsernamePasswordMode {_OS_USERNAME_MODE} sends the operating-system user name of the "
    "process that searches, and a server answering people over the network (`policy mcp serve "
    "--transport http`, a signed-in person's runtime) runs as its own service account, not as "
    "the person asking: it is never searched there, so nobody gets passages retrieved as "
    "another identity (serve it from each person's own machine: `policy chat`, a stdio "
    "gateway; or give a server SHARED_USERNAME_AND_PASSWORD or TOKEN, an account the ERI "
    "server grants what everyone asking may read)"
)
"""Why an entry that sends the OS user name is not searched for people a server answers: the
runtime refuses the entry with it, `policy check` warns with it when a sign-in is configured."""
