"""Fixed-sample non-inferiority methods, one module each (see methods.protocol)."""
