"""Bundled examples used by `jitkernel demo`."""
