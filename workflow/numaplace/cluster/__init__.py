"""Cluster: what each job asks of Slurm or PBS, and PBS's dialects."""
