"""History across builds: each stored session's per-function summary, series of a figure
per build, and the change points in them (``mcuprof history``, the History tab)."""
