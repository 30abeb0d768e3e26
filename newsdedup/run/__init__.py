"""What a run is judged and configured by: the settings it reads (:mod:`.options`, :mod:`.settings_file`), the
retry policy, the retention window, the run's statistics and its verdict (the exit status)."""
