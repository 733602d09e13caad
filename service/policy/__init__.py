"""Pure rules, touching no clock or database (the one I/O, the SSRF check's name lookup, is a
parameter): classification, backoff, signing, SSRF checks, durations, safe text, trace
context, how long a claim may wait, storing a batch in halves.
"""
