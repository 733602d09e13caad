"""The subcommands of `webhooks`; importing this package registers every module's commands
(each declares itself with `registry.command`, nowhere else)."""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
