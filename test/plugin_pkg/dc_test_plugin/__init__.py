"""Test plugin package for dyn_control's closed-chain mappings (see setup.py)."""
