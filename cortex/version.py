"""The cortex release this code is (reported by `cortex --version`, exports and the plugin install)."""

__version__ = "0.1.0"
