"""launcher: a precompiled, checked replacement for Triton's NVIDIA kernel launcher."""
__version__ = "0.1.0"
