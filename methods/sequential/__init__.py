"""Sequential non-inferiority methods, one module each (see methods.sequential.base)."""
