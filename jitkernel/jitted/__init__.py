"""The jobs of a jitted function, one module each; `jitkernel.api.Jitted` composes them.

- `signature`: how a call's arguments key the cache, and how two signatures differ.
- `dispatch`: `__call__`: the warm fast path, else the checked path; fast-entry registration.
- `compile_cache`: the compiled entries, misses (compile, shape-generic reuse, the retry with
  static integers), layout variants, eviction and the recompilation records.
- `tracing`: the trace of the function for one signature.
- `write_back`: variants for written arguments that alias each other or a global, and the
  byte order given back to outputs.
- `staging`: `lower` and `Lowered.as_text`.
"""
