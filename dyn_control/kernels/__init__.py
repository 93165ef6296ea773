"""@njit(cache=True) kernels on the flat arrays of Model and Data, one algorithm family a module.

Kernels never check their inputs (dynamics.py does, once) and allocate nothing: outputs go into
the Data buffers passed in. They work in tree coordinates, one per body.
"""
