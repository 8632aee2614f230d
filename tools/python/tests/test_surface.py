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


if __name__ == "__main__":
    unittest.main()
