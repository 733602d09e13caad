"""The running process: the worker, settings and their flags, logs, telemetry (counters,
gauges, traces), the status server, start-up and stop, retention.
"""
