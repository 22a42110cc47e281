"""Run a callback as soon as a module has executed, without importing that module ourselves.

`import hf_tagtok` must stay cheap, yet `AutoTokenizer`/`AutoProcessor` must know our classes the moment
transformers' auto modules exist: a one-shot meta-path finder wraps the module's loader.
"""
import importlib.machinery
import sys


class _AfterImport:
    def __init__(self, module_name, callback):
        self.module_name = module_name
        self.callback = callback

    def find_spec(self, name, path=None, target=None):
        if name != self.module_name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self.callback(module)

        spec.loader.exec_module = exec_module
        return spec


def call_after_import(module_name, callback):
    """Call `callback(module)` now if `module_name` is loaded, else right after it first executes."""
    if module_name in sys.modules:
        callback(sys.modules[module_name])
        return
    pending = any(isinstance(finder, _AfterImport) and finder.module_name == module_name
                  and finder.callback == callback for finder in sys.meta_path)
    if not pending:
        sys.meta_path.insert(0, _AfterImport(module_name, callback))
