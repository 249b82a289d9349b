"""The package version, in a module of its own so any layer can read it without importing
the package facade (which registers the Gymnasium ids)."""

__version__ = "0.1.0"
