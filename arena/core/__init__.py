"""Infrastructure every other part builds on: errors, paths, hashing, atomic artifacts, pins, BLAS, configs, seeds."""
