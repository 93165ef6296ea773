"""Source text a test's subprocess runs first: the names of the functions Numba compiles from then on
in `Compiles.names` (a load from the cache is no compile)."""
RECORDER = r"""
from numba.core import event


class Compiles(event.Listener):
    names = []

    def on_start(self, ev):
        self.names.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Compiles())
"""
