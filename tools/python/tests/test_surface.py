"""The package's surface: the stub (_native.pyi) declares exactly what the compiled module
has, every public name has a docstring, and the package imports without torch."""

import ast
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import hybridcache
import hybridcache.sglang
from hybridcache import _native


def stub_names():
    path = os.path.join(os.path.dirname(hybridcache.__file__), "_native.pyi")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    top, nested = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            top.add(node.name)
        if isinstance(node, ast.ClassDef) and node.name in ("cmd", "res"):
            nested[node.name] = {n.name for n in node.body if isinstance(n, ast.ClassDef)}
    return top, nested


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


class SurfaceTest(unittest.TestCase):
    def test_the_stub_declares_the_compiled_module(self):
        top, nested = stub_names()
        self.assertEqual(public(_native) - {"cmd", "res"}, top - {"cmd", "res"})
        self.assertEqual(public(_native.cmd), nested["cmd"])
        self.assertEqual(public(_native.res), nested["res"])

    def test_every_public_name_has_a_docstring(self):
        missing = []
        for mod in (hybridcache, hybridcache.sglang):
            names = getattr(mod, "__all__", None) or public(mod)
            for name in names:
                obj = getattr(mod, name)
                if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                    continue
                if not (obj.__doc__ or "").strip():
                    missing.append(f"{mod.__name__}.{name}")
                for attr, member in vars(obj).items() if inspect.isclass(obj) else ():
                    if attr.startswith("_") or not callable(member):
                        continue
                    if not (getattr(member, "__doc__", None) or "").strip():
                        missing.append(f"{mod.__name__}.{name}.{attr}")
        for sub in (_native.cmd, _native.res):
            for name in public(sub):
                if not (getattr(sub, name).__doc__ or "").strip():
                    missing.append(f"{sub.__name__}.{name}")
        self.assertEqual(missing, [])

    def test_value_classes_print_their_fields(self):
        """Specs, commands, results and pool figures print as Name(field=value, ...), not as
        <... object at 0x...>: what a REPL, a log line or a failed assertion shows."""
        handles = {"Session", "Store", "Node", "CudaMapping"}
        for mod, prefix in ((_native, ""), (_native.cmd, "cmd."), (_native.res, "res.")):
            for name in sorted(public(mod) - handles):
                cls = getattr(mod, name)
                if not isinstance(cls, type) or issubclass(cls, BaseException) \
                        or hasattr(cls, "__members__"):  # enums print as enums
                    continue
                if not any(isinstance(v, property) for v in vars(cls).values()):
                    continue
                with self.subTest(cls=prefix + name):
                    self.assertIn("__repr__", vars(cls))
        spec = hybridcache.InstanceSpec()
        spec.model_id, spec.kv_tokens = "m", 4096
        text = repr(spec)
        self.assertTrue(text.startswith("InstanceSpec(model_id='m', "), text)
        self.assertIn("kv_tokens=4096", text)
        self.assertEqual(repr(hybridcache.cmd.Create(req=3, tokens=list(range(100)))),
                         "cmd.Create(req=3, tokens=[0, 1, 2, 3, 4, 5, 6, 7, ... (100 items)], "
                         "shared=None)")
        self.assertEqual(repr(hybridcache.cmd.Match(req=3)), "cmd.Match(req=3)")

    def test_every_command_takes_the_stubs_keywords_into_its_fields(self):
        """Each cmd constructor form of the stub, called with its keywords (a distinct value
        each) or with those values in the stub's order, gives an object whose fields hold
        them, and called with the required ones only, the stub's defaults: a keyword the
        binding names otherwise, another order, or a value put into another field fails."""
        path = os.path.join(os.path.dirname(hybridcache.__file__), "_native.pyi")
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        cmd_stub = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "cmd")
        forms = 0
        for cls in (n for n in cmd_stub.body if isinstance(n, ast.ClassDef)):
            runtime = getattr(_native.cmd, cls.name)
            for init in (n for n in cls.body
                         if isinstance(n, ast.FunctionDef) and n.name == "__init__"):
                args = init.args.args[1:]  # after self
                defaults = dict(zip([a.arg for a in args[len(args) - len(init.args.defaults):]],
                                    init.args.defaults))
                given, unique = {}, 7
                for a in args:
                    kind = ast.unparse(a.annotation)
                    if kind == "bool":
                        given[a.arg] = not (isinstance(defaults.get(a.arg), ast.Constant)
                                            and defaults[a.arg].value)
                    elif kind.startswith(("Sequence", "List")):
                        given[a.arg] = [unique, unique + 1]
                    else:
                        given[a.arg] = unique
                    unique += 6
                with self.subTest(command=cls.name, form=list(given)):
                    forms += 1
                    for obj in (runtime(**given), runtime(*given.values())):  # by name, in order
                        for name, value in given.items():
                            self.assertEqual(getattr(obj, name), value, name)
                    required = {k: v for k, v in given.items() if k not in defaults}
                    obj = runtime(**required)
                    for name, default in defaults.items():
                        if isinstance(default, ast.Constant) and default.value is not ...:
                            self.assertEqual(getattr(obj, name), default.value, name)
        self.assertGreaterEqual(forms, len(public(_native.cmd)), "every command has a form")


class ImportTest(unittest.TestCase):
    def copy_of_the_package(self, tmp, native_name):
        """The package copied into tmp, its extension renamed to native_name (None: left
        out); returns the directory to put on sys.path."""
        src = os.path.dirname(hybridcache.__file__)
        dst = os.path.join(tmp, "hybridcache")
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        here = [n for n in os.listdir(dst) if n.startswith("_native") and n.endswith(".so")]
        self.assertEqual(len(here), 1, here)
        if native_name is None:
            os.remove(os.path.join(dst, here[0]))
        else:
            os.rename(os.path.join(dst, here[0]), os.path.join(dst, native_name))
        return tmp

    def import_error(self, path):
        r = subprocess.run([sys.executable, "-c", "import hybridcache"], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=path,
                                               PYTHONDONTWRITEBYTECODE="1"))
        self.assertNotEqual(r.returncode, 0, "the import succeeded")
        return r.stderr.strip().splitlines()[-1]

    def test_an_interpreter_it_was_not_built_for_is_told_which_one_it_was(self):
        # Python's own message was "cannot import name '_native' from partially initialized
        # module 'hybridcache' (most likely due to a circular import)".
        with tempfile.TemporaryDirectory() as tmp:
            path = self.copy_of_the_package(tmp, "_native.cpython-399-x86_64-linux-gnu.so")
            line = self.import_error(path)
        self.assertIn("ImportError: hybridcache's native module in", line)
        self.assertIn("is built for another Python (_native.cpython-399-x86_64-linux-gnu.so)",
                      line)
        self.assertIn(f"this interpreter ({sys.executable}, Python", line)
        self.assertIn(f"cmake -DHC_PYTHON={sys.executable}", line)
        self.assertNotIn("circular import", line)

    def test_a_package_without_its_extension_says_what_failed(self):
        with tempfile.TemporaryDirectory() as tmp:
            line = self.import_error(self.copy_of_the_package(tmp, None))
        self.assertIn("ImportError: hybridcache's native module in", line)
        self.assertIn("cannot be loaded:", line)


if __name__ == "__main__":
    unittest.main()
