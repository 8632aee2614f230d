"""The package's surface: the stub (_native.pyi) declares exactly what the compiled module
has, every public name has a docstring, and the package imports without torch."""

import ast
import inspect
import os
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


if __name__ == "__main__":
    unittest.main()
