"""Schedulers run a study's points: locally (default) or as Slurm job arrays."""
