"""@njit(cache=True) kernels on the flat arrays of Model and Data, one algorithm family a module.

Kernels never check their inputs (dynamics.py does, once) and allocate nothing: outputs go into
the Data buffers passed in. They work in tree coordinates, one per body.

The algorithms that entry kernels (entry.py) and the control ticks call are compiled with
`forceinline=True`: LLVM inlines them into their caller. A call between compiled functions passes
each array as its 7-11 fields on the stack and takes a reference to it, which on a 9-body arm cost as
much as the arithmetic (panda from Python: rnea 1.10 -> 1.04 us, minverse 2.0 -> 1.45 us, jacobian
0.94 -> 0.73 us). Numba's own `inline="always"` would type each copy again (+30 % of the cold
compile, measured); LLVM's inlining costs +8 % (98 -> 106 s for `dyn-control compile`).
"""
