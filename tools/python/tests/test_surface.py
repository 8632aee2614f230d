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
from hybridcache import _native, cmd


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
                    elif kind.startswith(("Sequence", "List", "Tokens")):
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


class TokensTest(unittest.TestCase):
    """A command's tokens: every form a caller may hold a prompt in reads back as the same
    list of ints; what is not tokens is refused with an error that names what is wrong."""

    def forms_of(self, values):
        import array
        import numpy
        out = {"list": list(values), "tuple": tuple(values),
               "array.array": array.array("q", values)}
        for dtype in (numpy.int8, numpy.uint16, numpy.int32, numpy.uint32, numpy.int64,
                      numpy.uint64):
            out[f"numpy {numpy.dtype(dtype).name}"] = numpy.array(values, dtype=dtype)
        out["numpy strided"] = numpy.array([v for v in values for _ in (0, 1)],
                                           dtype=numpy.int64)[::2]
        out["numpy scalars"] = list(numpy.array(values, dtype=numpy.int64))
        try:
            import torch
        except ImportError:
            return out
        out["torch int64"] = torch.tensor(values, dtype=torch.int64)
        out["torch int32"] = torch.tensor(values, dtype=torch.int32)
        out["torch scalars"] = [torch.tensor(v) for v in values]
        return out

    def test_every_form_of_a_prompt_reads_back_as_its_tokens(self):
        values = [0, 1, 2, 100, 3, 127]
        for name, tokens in self.forms_of(values).items():
            with self.subTest(form=name):
                for command in (cmd.Create(req=1, tokens=tokens), cmd.Append(1, tokens),
                                cmd.Lookup(tokens), cmd.Pin(tokens), cmd.Demote(tokens)):
                    self.assertEqual(command.tokens, values)
                    self.assertIs(type(command.tokens[0]), int)
                command = cmd.Create(req=1)
                command.tokens = tokens  # the field takes what the constructor takes
                self.assertEqual(command.tokens, values)
        self.assertEqual(cmd.Lookup(range(3, 6)).tokens, [3, 4, 5])
        self.assertEqual(cmd.Lookup([]).tokens, [])

    def test_the_edges_of_a_token_id(self):
        import numpy
        edges = [-2**31, 2**31 - 1]
        self.assertEqual(cmd.Create(1, edges).tokens, edges)
        self.assertEqual(cmd.Create(1, numpy.array(edges, dtype=numpy.int64)).tokens, edges)
        for beyond in ([2**31], [5, -2**31 - 1], numpy.array([0, 2**31]),
                       numpy.array([2**32], dtype=numpy.uint64),
                       [2**70]):
            with self.subTest(tokens=beyond):
                with self.assertRaisesRegex(ValueError, r"tokens\[\d\] = -?\d+ does not fit a "
                                                        r"token id"):
                    cmd.Create(1, beyond)

    def test_what_is_not_tokens_is_refused_naming_it(self):
        import numpy
        cases = [("abc", "expected a sequence of ints or a 1-D integer array, got str$"), (b"ab", "expected a sequence of ints or a 1-D integer array, got bytes$"),
                 (None, "expected a sequence of ints or a 1-D integer array, got NoneType$"), ({1, 2}, "expected a sequence of ints or a 1-D integer array, got set$"),
                 ({1: 2}, "expected a sequence of ints or a 1-D integer array, got dict$"), (5, "got int$"),
                 ([1, 2.5], r"tokens\[1\] is a float \(2.5\), not an int"),
                 ([1, "2"], r"tokens\[1\] is a str"),
                 (numpy.arange(3.0), "tokens are integers .convert with .astype"),
                 (numpy.array([True]), "tokens are integers"),
                 (numpy.zeros((2, 2), dtype=numpy.int32), "a 2-dimensional array"),
                 (numpy.arange(3).astype(">i4" if sys.byteorder == "little" else "<i4"),
                  "the other byte order")]
        try:
            import torch
            cases += [(torch.arange(3.0), "tokens are integers"),
                      (torch.tensor(3), "a 0-dimensional array"),
                      (torch.arange(3, device="meta"), "cannot read this Tensor as an array: "
                                                       ".*Tensor.cpu()")]
        except ImportError:
            pass
        for tokens, message in cases:
            with self.subTest(tokens=type(tokens).__name__, message=message):
                with self.assertRaisesRegex(TypeError, message):
                    cmd.Lookup(tokens)
                with self.assertRaisesRegex(TypeError, message):
                    cmd.Create(1).tokens = tokens


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
