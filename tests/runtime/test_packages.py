"""The runtime packages' public names: every name a package lists in `__all__` can be imported."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "package", ["policy", "runtime", "runtime.adapters", "runtime.providers", "runtime.tools"]
)
def test_every_listed_name_can_be_imported(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_importing_the_adapters_package_loads_no_adapter() -> None:
    code = (
        "import sys, runtime.adapters\n"
        "print(sorted(m for m in sys.modules if m.startswith('runtime.adapters.')))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "['runtime.adapters.base']"


def test_an_unknown_adapter_name_is_an_attribute_error() -> None:
    import runtime.adapters

    with pytest.raises(AttributeError, match="GeminiAdapter"):
        _ = runtime.adapters.GeminiAdapter  # type: ignore[attr-defined]


TOOL_AUTHOR_NAMES = {
    "policy": {
        "DefinedTool",
        "Tool",
        "ToolDefinition",
        "ToolFunction",
        "ToolOutboundData",
        "ToolConfigurationState",
        "CONFIGURED",
        "ResolutionContext",
        "SettingField",
        "SettingsSchema",
    },
    "runtime": {
        "ExecutableTool",
        "ArgumentReader",
        "ArgumentError",
        "ParameterSchemaBuilder",
        "RequestedCall",
        "RetrievalOverrides",
        "ToolExecutionContext",
        "ToolExecutionResult",
        "ToolExecutionBlocked",
        "ToolServices",
        "AddressClass",
        "PromptInjectionGuard",
        "Passage",
        "PassagePage",
        "OutboundDataRestriction",
        "ProviderFacts",
    },
}


@pytest.mark.parametrize("package", sorted(TOOL_AUTHOR_NAMES))
def test_what_a_tool_author_needs_is_public(package: str) -> None:
    module = importlib.import_module(package)
    assert TOOL_AUTHOR_NAMES[package] <= set(module.__all__)


def test_the_tool_author_names_are_the_defining_modules_and_load_lazily() -> None:
    code = (
        "import sys, runtime\n"
        "loaded = {m for m in sys.modules if m.startswith(('runtime.', 'policy.'))}\n"
        "print(sorted(loaded & {'runtime.web.addresses', 'runtime.web.guard', "
        "'runtime.data_sources'}))\n"
        "from runtime import AddressClass, OutboundDataRestriction, Passage, PassagePage, "
        "PromptInjectionGuard\n"
        "from policy.vocabulary import OutboundDataRestriction as policy_restriction\n"
        "from runtime.data_sources import Passage as passage\n"
        "from runtime.web.addresses import AddressClass as address_class\n"
        "from runtime.web.guard import PromptInjectionGuard as guard\n"
        "print(OutboundDataRestriction is policy_restriction, Passage is passage, "
        "AddressClass is address_class, PromptInjectionGuard is guard, "
        "PassagePage.__module__)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert shown == ["[]", "True True True True runtime.data_sources"]


def test_retrieval_overrides_live_in_a_public_module() -> None:
    from runtime import RetrievalOverrides

    assert RetrievalOverrides.__module__ == "runtime.retrieval_overrides"


def test_every_documented_error_derives_from_the_one_root() -> None:
    import policy
    import runtime
    from policy.builtin import ToolSettingsError
    from policy.catalog import UnknownToolError
    from policy.errors import ToolPolicyError
    from policy.export import ExportError, SecretExportError
    from policy.lua_sandbox import LuaSandboxError
    from policy.plugins import PluginLoadError
    from policy.secrets import SecretError
    from policy.user_settings import UserSettingsError
    from runtime.config_fetch import CaBundleError, ConfigurationArchiveError
    from runtime.providers.errors import ProviderAuthError, ProviderProtocolError
    from runtime.tools.web_search.backends import SearchBackendError
    from runtime.web.guard_http import InjectionFilterError
    from runtime.web.retrieval import WebPageAccessBlocked, WebRetrievalError

    assert policy.ToolPolicyError is runtime.ToolPolicyError is ToolPolicyError
    documented = [
        policy.UnknownProviderError,
        ExportError,
        SecretExportError,
        LuaSandboxError,
        PluginLoadError,
        UnknownToolError,
        SecretError,
        ToolSettingsError,
        UserSettingsError,
        ConfigurationArchiveError,
        CaBundleError,
        ProviderAuthError,
        ProviderProtocolError,
        SearchBackendError,
        InjectionFilterError,
        WebPageAccessBlocked,
        WebRetrievalError,
        runtime.ArgumentError,
        runtime.ChatRequirementError,
        runtime.ChatStoreError,
        runtime.InvalidToolCallingResponse,
        runtime.McpServerError,
        runtime.ProviderError,
        runtime.ToolExecutionBlocked,
    ]
    assert [e.__name__ for e in documented if not issubclass(e, ToolPolicyError)] == []
    assert issubclass(UnknownToolError, KeyError)
    assert issubclass(runtime.ArgumentError, ValueError)


def _imported_modules(path: str) -> set[str]:
    """Every module a source file imports, at the top or inside a function."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_providers_never_import_adapters_and_the_session_no_tool() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for source in sorted((root / "runtime" / "providers").glob("*.py")):
        imported = _imported_modules(str(source.relative_to(root)))
        assert not {m for m in imported if m.startswith("runtime.adapters")}, source.name
    session = _imported_modules("runtime/session.py")
    assert not {m for m in session if m.startswith("runtime.tools")}, session
    assert "policy.builtin" not in session


def test_create_adapter_is_the_adapters_packages_and_loads_no_adapter() -> None:
    code = (
        "import sys\nfrom runtime.adapters import create_adapter\n"
        "print(sorted(m for m in sys.modules if m.startswith('runtime.adapters.')))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "['runtime.adapters.base', 'runtime.adapters.factory']"
