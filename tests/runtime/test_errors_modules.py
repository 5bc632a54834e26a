"""`policy.errors` and `runtime.errors` show every error an app can catch, under one root.

An app that wants to handle what toolpolicy raises on purpose imports the errors module and
reads its tree; an error defined anywhere else but missing there is one the app cannot find.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

from policy.errors import ToolPolicyError

# Raised and caught inside one module, never reaching an app: a click usage error the CLI prints
# itself, and the SSE/stream error the MCP SDK turns into an error answer for one request.
INTERNAL = {
    "policy.cli_errors.CodedUsageError",
    "runtime.mcp_transport.MessageTooLarge",
}
# What a tool raises (not toolpolicy) so its quoted upstream text is treated as content.
RAISED_BY_TOOLS = {"runtime.execution.ContentQuotingError"}


def _public_exceptions(package: str) -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                found[f"{info.name}.{name}"] = value
    return found


@pytest.mark.parametrize("package", ["policy", "runtime"])
def test_every_public_exception_is_in_the_errors_module_under_the_root(package: str) -> None:
    errors = importlib.import_module(f"{package}.errors")
    shown = {getattr(errors, name) for name in errors.__all__}
    for where, error in _public_exceptions(package).items():
        if where in INTERNAL:
            continue
        assert error in shown, f"{where} is not listed in {package}.errors.__all__"
        assert error.__name__ in (errors.__doc__ or ""), f"{where} missing from the tree"
        if where not in RAISED_BY_TOOLS:
            assert issubclass(error, ToolPolicyError), f"{where} does not derive ToolPolicyError"


@pytest.mark.parametrize("package", ["policy", "runtime"])
def test_the_errors_module_lists_only_errors_and_the_old_paths_still_import(package: str) -> None:
    errors = importlib.import_module(f"{package}.errors")
    for name in errors.__all__:
        error = getattr(errors, name)
        assert inspect.isclass(error) and issubclass(error, Exception), name
        defining = importlib.import_module(error.__module__)
        assert getattr(defining, name) is error


def test_the_errors_modules_are_reachable_from_the_packages_root() -> None:
    import policy
    import runtime
    import runtime.errors

    assert runtime.ToolPolicyError is policy.ToolPolicyError is runtime.errors.ToolPolicyError
    assert runtime.ProviderError is runtime.errors.ProviderError


def test_an_unknown_name_in_an_errors_module_is_an_attribute_error() -> None:
    import runtime.errors

    with pytest.raises(AttributeError, match="ProviderTimeout"):
        _ = runtime.errors.ProviderTimeout  # type: ignore[attr-defined]


def test_importing_the_errors_modules_loads_no_error_defining_module() -> None:
    code = (
        "import sys, policy.errors, runtime.errors\n"
        "print(sorted(m for m in ('policy.plugins', 'policy.export', 'runtime.chat',"
        " 'runtime.mcp', 'runtime.loop') if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"
