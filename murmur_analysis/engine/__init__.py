"""The native decode engine (:mod:`._native`, Rust, built from ``native/``).

It decodes lines exactly as serde_json does, scans whole records into Arrow columns, and pairs
tool calls; the layers above call it through :mod:`murmur_analysis.core` and the cores. It is
the bottom layer: it imports nothing of the package.
"""
