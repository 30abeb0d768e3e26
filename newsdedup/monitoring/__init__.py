"""Scheduled runs and what people read from them: the monitor loop, the reprint report and the time
specifications of the command line."""
