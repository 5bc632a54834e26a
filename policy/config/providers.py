"""`CONFIG["LLM_PROVIDERS"]`: the providers users may choose (AI Studio's fields)."""

from __future__ import annotations

from policy.config.fields import Field, FieldType, Mistake, Section, UnknownFields
from policy.config.guid import GUID_SCHEMA_PATTERN
from policy.hosts import PROVIDER_HOSTS
from policy.vocabulary import PROVIDER_KIND_NAMES

CAPABILITIES: tuple[str, ...] = (
    "FUNCTION_CALLING", "CHAT_COMPLETION_API", "RESPONSES_API", "AUDIO_INPUT", "MULTIPLE_IMAGE_INPUT",
    "SPEECH_INPUT", "VIDEO_INPUT", "OPTIONAL_REASONING", "ALWAYS_REASONING", "REASONING_BY_DEFAULT",
)  # fmt: skip
_HF_INFERENCE_PROVIDERS: tuple[str, ...] = (
    "CEREBRAS", "NEBIUS_AI_STUDIO", "SAMBANOVA", "NOVITA", "HYPERBOLIC", "TOGETHER_AI", "FIREWORKS",
    "HF_INFERENCE_API",
)  # fmt: skip
ENCRYPTED_PATTERN = "^ENC:v1:"

LLM_PROVIDERS = Section(
    "LLM_PROVIDERS",
    "The providers users may choose; each becomes a `ProviderConfig`.",
    (
        Field(
            "Id",
            FieldType.GUID,
            "The provider instance's id.",
            required=True,
            pattern=GUID_SCHEMA_PATTERN,
            example="6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f41",
        ),
        Field(
            "InstanceName",
            FieldType.TEXT,
            "The name users see.",
            required=True,
            example="Company GPU cluster",
        ),
        Field(
            "UsedLLMProvider",
            FieldType.CHOICE,
            "The provider kind: decides its confidence level and wire API.",
            required=True,
            choices=PROVIDER_KIND_NAMES,
            example="SELF_HOSTED",
        ),
        Field(
            "Host",
            FieldType.CHOICE,
            "For SELF_HOSTED, the server software; one that serves chat is needed.",
            required=True,
            choices=tuple(PROVIDER_HOSTS),
            example="VLLM",
        ),
        Field(
            "Hostname",
            FieldType.TEXT,
            "The base URL (plain http or https); needed for SELF_HOSTED and deployments.",
            required=True,
            example="https://llm.example.org",
        ),
        Field(
            "Model",
            FieldType.TABLE,
            "The model: its id and the name users see.",
            required=True,
            fields=(
                Field(
                    "Id", FieldType.TEXT, "The model id.", required=True, example="Qwen/Qwen3-32B"
                ),
                Field(
                    "DisplayName",
                    FieldType.TEXT,
                    "The name shown.",
                    required=True,
                    example="Qwen3 32B",
                ),
            ),
            example={"Id": "Qwen/Qwen3-32B", "DisplayName": "Qwen3 32B"},
        ),
        Field(
            "HFInferenceProvider",
            FieldType.CHOICE,
            "HUGGINGFACE: the inference provider that receives the chats (never guessed).",
            choices=_HF_INFERENCE_PROVIDERS,
            example="NOVITA",
        ),
        Field(
            "AdditionalJsonApiParameters",
            FieldType.TEXT,
            "JSON fields added to every request (they may switch off retention or logging).",
            example='"store": false',
        ),
        Field(
            "CapabilityOverrides",
            FieldType.FLAG_MAP,
            "Capability name → true (add) or false (remove): corrects what is known about the "
            "model. FUNCTION_CALLING = true lets a self-hosted model use tools; false takes tools "
            "away from any model.",
            choices=CAPABILITIES,
            example={"FUNCTION_CALLING": True},
        ),
        Field(
            "AllowUserProvidedAPIKey",
            FieldType.BOOL,
            "Users bring their own API key (APIKey is then ignored).",
            default=False,
            mistake=Mistake.IGNORED,
            example=False,
        ),
        Field(
            "TokenizerPath",
            FieldType.TEXT,
            "AI Studio's tokenizer file; kept.",
            mistake=Mistake.IGNORED,
            example="tokenizer.json",
        ),
        Field(
            "APIKey",
            FieldType.SECRET,
            "Only encrypted values are accepted (policy encrypt).",
            pattern=ENCRYPTED_PATTERN,
            mistake=Mistake.IGNORED,
            example="ENC:v1:...",
        ),
    ),
    fails_closed=True,
    unknown_fields=UnknownFields.NEAR_MISS_SKIPS,
)
