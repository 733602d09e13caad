"""Pure rules, touching no clock, database or network: classification, backoff, signing, SSRF
checks, durations, safe text, trace context, the duty cycle.
"""
