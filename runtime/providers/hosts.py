"""Host profiles: what each provider host speaks and promises, chosen from a policy provider entry.

A profile is data the adapters consult (wire API, strict binding, `parallel_tool_calls`, auth);
no adapter knows a host by name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from policy import ProviderConfig, ProviderKind
from policy._runtime_seam import (
    DEPLOYMENT_KINDS,
    SELF_HOSTED_CHAT_SERVERS,
    provider_address_problem,
    read_base_url,
)
from runtime.providers.errors import ProviderConfigurationError

WireApi = Literal["chat_completions", "responses", "anthropic"]

_ENDPOINT_PATHS: dict[str, str] = {
    "chat_completions": "/chat/completions",
    "responses": "/responses",
    "anthropic": "/messages",
}


@dataclass(frozen=True, slots=True)
class HostProfile:
    """One host as the adapters see it."""

    name: str
    wire_api: WireApi
    base_url: str
    enforces_strict_tool_schemas: bool = False
    """Only a host that binds the model's output to the schema keeps OpenAI strict mode."""
    accepts_parallel_tool_calls: bool = True
    """False for hosts that answer `parallel_tool_calls` with HTTP 400 (Hugging Face)."""
    auth_header: str = "Authorization"
    auth_scheme: str = "Bearer"
    """Prefix of the header value ("" sends the bare key, as Anthropic's x-api-key wants)."""
    api_key_env: str = ""
    """Environment variable read when the caller passes no key."""
    requires_api_key: bool = True
    extra_headers: tuple[tuple[str, str], ...] = ()
    max_tokens_field: str = "max_tokens"
    asks_for_stream_usage: bool = False
    """Send `stream_options.include_usage` (hosts that report usage only when asked)."""
    reasoning_fields: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")
    """Chat Completions: the assistant-message fields that carry the model's reasoning on this
    host; each is kept verbatim from the stream and sent back under its own name."""
    think_tags_resent_as: str | None = None
    """Chat Completions: the field a `<think>…</think>` block (split off the answer text) goes
    back in; None keeps it out of the next request."""
    reasoning_model_prefixes: tuple[str, ...] = ()
    """Responses: model ids (by prefix) that reason; under `store: false` they are asked for
    `reasoning.encrypted_content` so their reasoning items can be sent back."""
    non_reasoning_model_prefixes: tuple[str, ...] = ()
    """Responses: exceptions to `reasoning_model_prefixes` (models that refuse the include)."""

    @property
    def endpoint_url(self) -> str:
        return self.base_url + _ENDPOINT_PATHS[self.wire_api]

    def is_reasoning_model(self, model: str) -> bool:
        """Whether `model` reasons on this host (decides the Responses encrypted-content include)."""
        name = model.strip().lower().rsplit("/", 1)[-1]
        if name.startswith(self.non_reasoning_model_prefixes):
            return False
        return bool(self.reasoning_model_prefixes) and name.startswith(
            self.reasoning_model_prefixes
        )

    @property
    def requires_call_ids(self) -> bool:
        """Only Chat Completions lets us make up a missing call id (it only has to match ours)."""
        return self.wire_api != "chat_completions"


def _compatible(
    name: str,
    base_url: str,
    api_key_env: str,
    *,
    accepts_parallel_tool_calls: bool = True,
    requires_api_key: bool = True,
    reasoning_fields: tuple[str, ...] | None = None,
    think_tags_resent_as: str | None = None,
) -> HostProfile:
    """A Chat Completions host that does not bind tool calls to the schema."""
    profile = HostProfile(
        name=name,
        wire_api="chat_completions",
        base_url=base_url,
        api_key_env=api_key_env,
        accepts_parallel_tool_calls=accepts_parallel_tool_calls,
        requires_api_key=requires_api_key,
        think_tags_resent_as=think_tags_resent_as,
    )
    if reasoning_fields is not None:
        profile = dataclasses.replace(profile, reasoning_fields=reasoning_fields)
    return profile


_OPENAI_REASONING_MODELS = ("o1", "o3", "o4", "gpt-5", "codex")
_OPENAI_PLAIN_MODELS = ("gpt-5-chat",)


OPENAI_RESPONSES = HostProfile(
    name="OpenAI",
    wire_api="responses",
    base_url="https://api.openai.com/v1",
    enforces_strict_tool_schemas=True,
    api_key_env="OPENAI_API_KEY",
    max_tokens_field="max_output_tokens",
    reasoning_model_prefixes=_OPENAI_REASONING_MODELS,
    non_reasoning_model_prefixes=_OPENAI_PLAIN_MODELS,
)
OPENAI_CHAT_COMPLETIONS = dataclasses.replace(
    OPENAI_RESPONSES,  # the same host (address, key, strict binding) over Chat Completions
    wire_api="chat_completions",
    max_tokens_field="max_completion_tokens",
    asks_for_stream_usage=True,
    reasoning_model_prefixes=(),
    non_reasoning_model_prefixes=(),
)
ANTHROPIC = HostProfile(
    name="Anthropic",
    wire_api="anthropic",
    base_url="https://api.anthropic.com/v1",
    enforces_strict_tool_schemas=True,
    auth_header="x-api-key",
    auth_scheme="",
    api_key_env="ANTHROPIC_API_KEY",
    extra_headers=(("anthropic-version", "2023-06-01"),),
)

_CLOUD_HOSTS: dict[ProviderKind, HostProfile] = {
    ProviderKind.OPEN_AI: OPENAI_RESPONSES,
    ProviderKind.ANTHROPIC: ANTHROPIC,
    ProviderKind.GROQ: _compatible(
        "Groq",
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        reasoning_fields=("reasoning",),
        think_tags_resent_as="reasoning",
    ),
    ProviderKind.MISTRAL: _compatible("Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    ProviderKind.OPEN_ROUTER: _compatible(
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        reasoning_fields=("reasoning", "reasoning_details"),
    ),
    ProviderKind.FIREWORKS: _compatible(
        "Fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"
    ),
    ProviderKind.DEEP_SEEK: _compatible(
        "DeepSeek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
        reasoning_fields=("reasoning_content",),
    ),
    ProviderKind.X: _compatible("xAI", "https://api.x.ai/v1", "XAI_API_KEY"),
    ProviderKind.HUGGINGFACE: _compatible(
        "Hugging Face",
        "https://router.huggingface.co/v1",
        "HF_TOKEN",
        accepts_parallel_tool_calls=False,
    ),
    ProviderKind.HELMHOLTZ: _compatible(
        "Helmholtz Blablador",
        "https://api.helmholtz-blablador.fz-juelich.de/v1",
        "HELMHOLTZ_API_KEY",
    ),
    ProviderKind.GWDG: _compatible(
        "GWDG SAIA", "https://chat-ai.academiccloud.de/v1", "GWDG_API_KEY"
    ),
    ProviderKind.IONOS: _compatible(
        "IONOS AI Model Hub", "https://openai.inference.de-txl.ionos.com/v1", "IONOS_API_KEY"
    ),
    ProviderKind.PERPLEXITY: _compatible(
        "Perplexity", "https://api.perplexity.ai", "PERPLEXITY_API_KEY"
    ),
    ProviderKind.ALIBABA_CLOUD: _compatible(
        "Alibaba Cloud",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
    ),
    ProviderKind.GOOGLE: _compatible(
        "Google Gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
}

# Hosts without a public default address (policy.hosts.DEPLOYMENT_KINDS names them): the
# plugin's Hostname names the deployment. Per kind: (key variable, whether a key is required).
_DEPLOYMENT_KEYS: dict[ProviderKind, tuple[str, bool]] = {
    ProviderKind.HETZNER: ("HETZNER_API_KEY", True),
    ProviderKind.LITE_LLM: ("LITELLM_API_KEY", False),
}


def host_profile_for(provider: ProviderConfig, *, wire_api: WireApi | None = None) -> HostProfile:
    """The profile for a `CONFIG["LLM_PROVIDERS"]` entry.

    A non-empty `hostname` replaces the default base URL (gateways, regional endpoints, tests);
    self-hosted servers, Hetzner and LiteLLM need it. `wire_api` picks OpenAI's Chat Completions
    path instead of Responses; other hosts speak only one API.
    """
    where = f"provider '{provider.name or provider.id}'"
    base_url = (
        _base_url_from_hostname(provider.hostname, where) if provider.hostname.strip() else ""
    )
    profile = _profile_for_kind(provider, where, base_url)
    if wire_api is not None and wire_api != profile.wire_api:
        if provider.kind is not ProviderKind.OPEN_AI or wire_api == "anthropic":
            raise ProviderConfigurationError(
                f"{where}: {profile.name} speaks only the {profile.wire_api} API, not {wire_api}.",
                provider=provider.name,
            )
        profile = dataclasses.replace(OPENAI_CHAT_COMPLETIONS, base_url=profile.base_url)
    return profile


def _profile_for_kind(provider: ProviderConfig, where: str, base_url: str) -> HostProfile:
    kind = provider.kind
    if kind in _CLOUD_HOSTS:
        cloud = _CLOUD_HOSTS[kind]
        return dataclasses.replace(cloud, base_url=base_url) if base_url else cloud
    if kind not in DEPLOYMENT_KINDS and kind is not ProviderKind.SELF_HOSTED:
        known = ", ".join(
            k.value for k in (*_CLOUD_HOSTS, *DEPLOYMENT_KINDS, ProviderKind.SELF_HOSTED)
        )
        raise ProviderConfigurationError(
            f"{where}: UsedLLMProvider {kind.value} has no host profile; use one of {known}.",
            provider=provider.name,
        )
    problem = provider_address_problem(kind, provider.host, base_url)
    if problem is not None:
        raise ProviderConfigurationError(f"{where}: {problem}.", provider=provider.name)
    if kind is ProviderKind.SELF_HOSTED:
        if not base_url.endswith("/v1"):
            base_url += "/v1"
        name = SELF_HOSTED_CHAT_SERVERS[provider.host.strip().upper()]
        return _compatible(name, base_url, "", requires_api_key=False)
    env, needs_key = _DEPLOYMENT_KEYS[kind]
    return _compatible(DEPLOYMENT_KINDS[kind], base_url, env, requires_api_key=needs_key)


def _base_url_from_hostname(hostname: str, where: str) -> str:
    try:
        return read_base_url(hostname, "Hostname")
    except ValueError as error:
        raise ProviderConfigurationError(f"{where}: {error}") from None
