"""The package's `njit` and `cfunc`: Numba's, with `cache=True` going to the package's kernel cache.

Every compiled function of the package is declared with these (`from ..jit import njit`), so that
its cache entry is found by every entry point and is never stale (kernel_cache.py). The options are
Numba's own.
"""
from numba import cfunc as _numba_cfunc
from numba import config
from numba import njit as _numba_njit
from numba.core import sigutils
from numba.core.ccallback import CFunc

from .kernel_cache import KernelCache


def _with_kernel_cache(compiled, options):
    if hasattr(compiled, "py_func"):        # (with NUMBA_DISABLE_JIT=1 it is the plain function)
        compiled._cache = KernelCache(compiled.py_func, options)
    return compiled


def njit(*args, **options):
    """numba.njit, its cache (cache=True) the package's: `@njit(cache=True, ...)` or `@njit`."""
    cache = options.pop("cache", False)

    def decorate(function):
        compiled = _numba_njit(**options)(function)
        return _with_kernel_cache(compiled, options) if cache else compiled
    if args and callable(args[0]):
        return decorate(args[0])
    return decorate


def cfunc(signature, cache=False):
    """numba.cfunc (no further options), its cache (cache=True) the package's."""
    def decorate(function):
        if config.DISABLE_JIT:
            return _numba_cfunc(signature)(function)
        compiled = CFunc(function, sigutils.normalize_signature(signature), locals={}, options={})
        if cache:
            compiled._cache = KernelCache(function, {})
        compiled.compile()
        return compiled
    return decorate
