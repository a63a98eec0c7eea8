"""One root for the app's failures, as the tree in desktop/core/errors.py documents."""

import inspect
import pkgutil
from importlib import import_module

import desktop.core
from desktop.core import errors
from desktop.core.errors import LoomchatError, ToolError, UsageError


def exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for module in pkgutil.walk_packages(desktop.core.__path__, prefix="desktop.core."):
        for name, value in vars(import_module(module.name)).items():
            mine = inspect.isclass(value) and value.__module__.startswith("desktop.")
            if mine and issubclass(value, BaseException):
                found[name] = value
    return found


def test_every_exception_of_the_core_is_under_the_root_and_in_the_documented_tree() -> None:
    classes = exception_classes()
    assert {"ProviderError", "RuntimeSetupError", "McpConfigError", "ImageError"} <= set(classes)
    tree = errors.__doc__ or ""
    for name, cls in classes.items():
        assert issubclass(cls, LoomchatError), name
        assert f"\n{name}\n" in tree or f"── {name} " in tree, f"{name} is not in the tree"


def test_usage_and_tool_errors_keep_the_builtin_kinds_they_were() -> None:
    classes = exception_classes()
    assert issubclass(classes["McpConfigError"], UsageError)
    assert issubclass(UsageError, ValueError)
    for name in ("ImageError", "WorkspaceError", "CalculationError"):
        assert issubclass(classes[name], ToolError) and issubclass(classes[name], ValueError)
    for name in ("McpToolError", "WorkerCrashed"):
        assert issubclass(classes[name], ToolError) and issubclass(classes[name], RuntimeError)
