"""Decision methods: one protocol (:mod:`methods.protocol`), one small module per method
(``methods/fixed``, ``methods/sequential``), a registry, slow reference implementations.

Importing ``simlab`` first keys numba's cache on the kernel sources before any kernel here
is compiled or loaded."""
import simlab  # noqa: F401
