"""The version of hr (the one place it is written besides pyproject.toml)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
