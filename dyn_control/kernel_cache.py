"""Where the package's compiled kernels live on disk, and when they are stale.

Numba's own cache keys a function's entry on its own source file: a compiled function that calls a
kernel of another module (a tick calls rnea, rnea calls spatial.py) carries that kernel's machine code
inside it, so after an edit of the kernel it would load stale code, and any edit of a file throws away
every entry of that file. `KernelCache` keys an entry on the *content* of everything the compiled code
was built from instead:

- the function's own code (bytecode, constants and names, nested code objects included);
- recursively, every compiled function it refers to (by a global or a closure variable, in any
  module), and the values of the constants it reads (Numba freezes globals at compile time);
- the source file of any other object of this package it refers to (an `@overload`ed or
  `@intrinsic` helper such as packed.view);
- the compile flags a function inherits from the function it is compiled for (Numba's runtime,
  fastmath, error model, forced inlining: a kernel compiled for an entry kernel without the runtime
  is another machine code than the same kernel compiled for a tick), so that which caller compiled it
  first never decides what the other loads.

So an edit recompiles exactly the functions whose code, or whose callees' code, changed, and leaves
every other entry valid, whatever the files' dates. Entries of an older version of a function are
removed when the new one is saved.

Location (`cache_dirs`): NUMBA_CACHE_DIR when set (read and write); else the package's own folder
`__kernel_cache__` beside its modules, where `dyn-control compile` at build time (setup.py, the
Makefile) writes, so that every entry point of one installation (the nodes, the CLI, the tests, a
user's script) finds the same compiled kernels without any setting. Where that folder cannot be
written (an install tree read-only at run time), new entries go to the user's cache
`$XDG_CACHE_HOME/dyn_control/kernels` (default ~/.cache) and the package's folder is still read.
"""
import contextlib
import fcntl
import hashlib
import os
import sys
import types as pytypes

import numpy as np
from numba.core import caching, config
from numba.core.targetconfig import ConfigStack

PACKAGE = __name__.rpartition(".")[0]
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
PACKAGE_CACHE = os.path.join(PACKAGE_DIR, "__kernel_cache__")
STAMP = "content-keyed"     # every index's source stamp: freshness is in the keys, not in file stamps


def user_cache():
    """The user's cache folder for the kernels: $XDG_CACHE_HOME/dyn_control/kernels (~/.cache/...)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, PACKAGE, "kernels")


def _writable(folder):
    try:
        os.makedirs(folder, exist_ok=True)
        return os.access(folder, os.W_OK | os.X_OK) and _can_create(folder)
    except OSError:
        return False


def _can_create(folder):
    probe = os.path.join(folder, f".probe-{os.getpid()}")
    try:
        with open(probe, "wb"):
            pass
        os.unlink(probe)
        return True
    except OSError:
        return False


_DIRS = {}


def cache_dirs():
    """(folder written to, folders read in order): see the module's docstring."""
    key = config.CACHE_DIR or None
    if key not in _DIRS:
        if key:
            _DIRS[key] = (key, (key,))
        elif _writable(PACKAGE_CACHE):
            _DIRS[key] = (PACKAGE_CACHE, (PACKAGE_CACHE,))
        else:
            _DIRS[key] = (user_cache(), (user_cache(), PACKAGE_CACHE))
    return _DIRS[key]


# ----------------------------------------------------------------------------------------------
# The content key


def _constant_bytes(value):
    """A stable byte string for a constant Numba would freeze, or None for anything else."""
    if isinstance(value, (bool, int, float, complex, str, bytes, type(None))):
        return repr(value).encode()
    if isinstance(value, tuple):
        parts = [_constant_bytes(v) for v in value]
        return None if any(p is None for p in parts) else b"(" + b",".join(parts) + b")"
    if isinstance(value, np.ndarray):
        return repr((value.dtype.str, value.shape)).encode() + value.tobytes()
    if isinstance(value, np.generic):
        return repr((value.dtype.str, value.item())).encode()
    return None


def _hash_code(code, h):
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            _hash_code(const, h)
        elif isinstance(const, frozenset):
            h.update(repr(sorted(map(repr, const))).encode())
        else:
            h.update(repr(const).encode())


def _names(code):
    names = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _names(const)
    return names


def _file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _ours(obj):
    module = getattr(obj, "__module__", None) or ""
    return module == PACKAGE or module.startswith(PACKAGE + ".")


_DIGESTS = {}


def content_digest(py_func):
    """The hex digest of everything the compiled `py_func` is built from (see the module's docstring).
    Memoized for the process: sources do not change under a running interpreter."""
    digest = _DIGESTS.get(py_func)
    if digest is None:
        h = hashlib.sha256()
        _hash_function(py_func, h, set())
        digest = _DIGESTS[py_func] = h.hexdigest()
    return digest


def _hash_function(py_func, h, seen):
    if py_func in seen:          # recursion: the function's own code is already in the hash
        h.update(b"<recursive>" + py_func.__qualname__.encode())
        return
    seen.add(py_func)
    code = py_func.__code__
    h.update(f"{py_func.__module__}.{py_func.__qualname__}".encode())
    _hash_code(code, h)
    scope = dict(py_func.__globals__)
    if py_func.__closure__:
        scope.update(zip(code.co_freevars, (cell.cell_contents for cell in py_func.__closure__)))
    names = _names(code)
    for name in sorted(names):
        if name in scope:
            _hash_reference(name, scope[name], names, h, seen)


def _hash_reference(name, value, names, h, seen):
    h.update(b"|" + name.encode() + b"=")
    inner = getattr(value, "py_func", None)          # a compiled function (Dispatcher)
    if isinstance(inner, pytypes.FunctionType):
        _hash_function(inner, h, seen)
        return
    constant = _constant_bytes(value)
    if constant is not None:
        h.update(constant)
    elif isinstance(value, pytypes.ModuleType):
        if value.__name__.startswith(PACKAGE + "."):  # module.attribute: the attributes it may use
            for attribute in sorted(names):
                if hasattr(value, attribute):
                    _hash_reference(f"{name}.{attribute}", getattr(value, attribute), (), h, seen)
        else:
            h.update(value.__name__.encode())
    elif _ours(value):                               # an overloaded, intrinsic or other helper of ours
        h.update(_file_digest(sys.modules[value.__module__].__file__).encode())
    else:
        h.update(repr(type(value)).encode())


# ----------------------------------------------------------------------------------------------
# Numba's cache with that key and location


class _Locator(caching._CacheLocator):
    """The package's folder for the module of `py_func` (cache_dirs()[0]); the source stamp is a
    constant: freshness is in the key (KernelCache._index_key), not in the file's stamp."""

    def __init__(self, py_func, folder):
        self._py_file = py_func.__code__.co_filename
        module = py_func.__module__
        self._cache_path = os.path.join(folder, *module.split("."))

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return STAMP

    def get_disambiguator(self):
        return "k"

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, cache_dirs()[0])


class _Impl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock (on `path`.lock) for as long as within."""
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class _IndexFile(caching.IndexDataCacheFile):
    """Numba's index and data files, where saving the entry of a new version of a function's code
    removes the entries (and data files) of its older versions: those of the same closure variables
    and inherited flags whose bytecode or content digest differ (key[2], KernelCache._index_key).
    A save reads the index, adds its entry, picks a free data file name and writes both under a lock:
    processes that save into one index at once (`dyn-control compile`'s, two nodes compiling one
    kernel) would otherwise each write back the index they read, losing the other's entry, or write
    two entries into one data file."""

    def save(self, key, data):
        os.makedirs(self._cache_path, exist_ok=True)
        with _locked(self._index_path):
            overloads = self._load_index()
            stale = {k: name for k, name in overloads.items()
                     if _version(k) != _version(key) and _variant(k) == _variant(key)}
            if stale:
                for k, name in stale.items():
                    del overloads[k]
                    try:
                        os.unlink(self._data_path(name))
                    except OSError:
                        pass
                self._save_index(overloads)
            super().save(key, data)


def _version(key):
    """The code an entry was compiled from: the hashes of its bytecode and its content digest."""
    return key[2][0], key[2][2]


def _variant(key):
    """What else an entry depends on: its closure variables and its inherited flags."""
    return key[2][1], key[2][3]


# the flags a compile inherits from its caller (numba.core.cpu.CPUTargetOptions.finalize): the flag,
# the decorator's option that sets it, its default without a caller
_INHERITED = (("nrt", "_nrt", True), ("fastmath", "fastmath", False), ("error_model", "error_model", "python"),
              ("forceinline", "forceinline", False))


def _flag_repr(value):
    flags = getattr(value, "flags", None)          # FastMathOptions
    return repr(sorted(flags)) if flags is not None else repr(value)


class KernelCache(caching.FunctionCache):
    """Numba's per-function cache, keyed on content (content_digest) and on the flags the compile
    inherits, kept in cache_dirs(); a load that misses the folder written to also looks in the
    package's own (read-only) folder. `options`: the decorator's options."""

    _impl_class = _Impl

    def __init__(self, py_func, options):
        self._options = options
        super().__init__(py_func)
        self._cache_file = _IndexFile(self._cache_path, self._impl.filename_base, STAMP)
        written, read = cache_dirs()
        self._fallbacks = [_IndexFile(os.path.join(folder, *py_func.__module__.split(".")),
                                      self._impl.filename_base, STAMP)
                           for folder in read if folder != written]

    def _index_key(self, sig, codegen):
        key = super()._index_key(sig, codegen)
        return key[:2] + (key[2] + (content_digest(self._py_func), self._inherited_flags()),)

    def _inherited_flags(self):
        """The flags the compile inherits, as Numba decides them: the decorator's option, else the
        caller's flag (the compile in progress, on Numba's configuration stack), else the default.
        The same at a load and at the save that follows a compile."""
        caller = ConfigStack.top_or_none()
        values = []
        for flag, option, default in _INHERITED:
            if option in self._options:
                value = self._options[option]
            elif caller is not None and caller.is_set(flag):
                value = getattr(caller, flag)
            else:
                value = default
            values.append(f"{flag}={_flag_repr(value)}")
        return ",".join(values)

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        key = self._index_key(sig, target_context.codegen())
        for index in [self._cache_file] + self._fallbacks:
            data = index.load(key)
            if data is not None:
                return self._impl.rebuild(target_context, data)
        return None
