"""What the processes run on: settings and their parsers, logs, telemetry (counters, gauges,
traces, zero histograms, OpenTelemetry without fork handlers), the worker's status server,
waiting for the database at start, holding an early SIGTERM, the garbage collector's freeze,
the GraphQL context, the duty cycle and the worker's retention job.
"""
