"""A plugin module that cannot be imported."""
raise ImportError("dc_test_plugin.broken is broken on purpose")
