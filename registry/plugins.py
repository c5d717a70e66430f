"""Import a researcher's own module so that what it registers is usable in recipes.

A plugin is an importable module name (`my_lab.encoders`) or a path to a `.py` file. A file is
imported once per resolved path, so loading it again is a no-op (registering its components twice
would be an error). It is imported under its own name (`my_encoder.py` → `my_encoder`) unless
another module already holds that name, so a recipe's `import my_encoder` line finds the module
the `--plugin` flag loaded instead of importing the file a second time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from registry.errors import PluginError


def load_plugin(spec: str | Path) -> ModuleType:
    """Import a plugin given as a module name or a `.py` file path; return the module."""
    text = str(spec)
    if text.endswith(".py") or Path(text).is_file():
        return _load_file(Path(text))
    try:
        return importlib.import_module(text)
    except ModuleNotFoundError as e:
        raise PluginError(
            f"plugin module {text!r} not found ({e}); pass an importable module name or a path "
            "to a .py file"
        ) from e


def _load_file(path: Path) -> ModuleType:
    path = path.expanduser().resolve()
    if not path.is_file():
        raise PluginError(f"plugin file not found: {path}; expected a path to a .py file")
    for module in list(sys.modules.values()):  # loaded before, by this or another name
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == path:
            return module
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    taken = path.stem in sys.modules or not path.stem.isidentifier()
    module_name = f"focalpp_plugin_{path.stem}_{digest}" if taken else path.stem
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise PluginError(f"cannot import plugin file {path}: not a Python source file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.parent))  # the plugin may import its neighbours
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[module_name]
        raise PluginError(
            f"plugin file {path} has a syntax error at line {e.lineno}: {e.msg}"
        ) from e
    except Exception as e:
        del sys.modules[module_name]
        raise PluginError(
            f"plugin file {path} failed while importing: {type(e).__name__}: {e} "
            "(--debug shows the traceback)"
        ) from e
    except BaseException:
        del sys.modules[module_name]
        raise
    finally:
        sys.path.remove(str(path.parent))
    return module
