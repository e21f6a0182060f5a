"""manylab: full-system emulation lab for many-core OS and hybrid-memory research."""

__version__ = "0.1.0"
