"""The scheduler beside the fleet (Slurm): found on the bastion, read once per poll round, and told
what a repair does (drain, resume). Without one everything works as before."""
