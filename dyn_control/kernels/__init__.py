"""@njit(cache=True) kernels on the flat arrays of Model and Data, one algorithm family a module.

Kernels never check their inputs (dynamics.py does, once) and allocate nothing: outputs go into
the Data buffers passed in. They work in tree coordinates, one per body.

The algorithms that entry kernels (entry.py) and the control ticks call are compiled with
`forceinline=True`: LLVM inlines them into their caller. A call between compiled functions passes
each array as its 7-11 fields on the stack and takes a reference to it, which on a 9-body arm cost as
much as the arithmetic (panda from Python: rnea 1.10 -> 1.04 us, minverse 2.0 -> 1.45 us, jacobian
0.94 -> 0.73 us). Numba's own `inline="always"` would type each copy again (+30 % of the cold
compile, measured); LLVM's inlining costs +8 % (98 -> 106 s for `dyn-control compile`).

The kernels that Python calls for one public function (entry.py's, and the contact kernels) are
compiled with `_nrt=False`: Numba then unboxes their array arguments without the runtime's
memory-info record (one allocation and one locked reference count each, freed and released after
the call) and counts no references inside. On panda from Python: jacobian 1.36 -> 1.01 x
Pinocchio, forward_kinematics 1.59 -> 1.06 x, constrained_dynamics 1.22 -> 0.95 x. What they call
inherits the flag when it is compiled for them first (else it counts references to nothing, which
costs a call each), so everything they reach must compile without the runtime: it allocates nothing
(not even the temporary that an array-to-slice assignment `a[:] = b` may copy through: loops
instead) and returns only the arrays it was given or borrowed views of them (packed.view, itself
compiled with the runtime: Numba refuses other returns there).
"""
