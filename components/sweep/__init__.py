"""Studies (recipes × envs × seeds) run through registered backends (kind `backend`): `local`
(a pool of processes on this machine) and `ray` (a Ray cluster, or Ray started here).
"""
