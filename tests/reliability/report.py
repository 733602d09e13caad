"""The readable report of one chaos scenario, from its verdict's counts."""

from __future__ import annotations

import contextlib

from tests.reliability.check import Verdict

LINES = (  # (label, format using the verdict's counts); a line whose fields are missing is skipped
    ("events", "{events:,} published, {configs} subscribed configs each"),
    ("deliveries", "{deliveries:,} of {expected_deliveries:,} expected: {succeeded:,} "
                   "succeeded, {failed:,} failed (budget of {max_attempts} attempts), "
                   "{cancelled:,} cancelled"),
    ("lost", "{lost:,}"),
    ("stuck", "{stuck:,} (pending or delivering at the end)"),
    ("attempts", "{attempts:,} recorded"),
    ("POSTs", "{posts:,} received: {posts_ok:,} ok, {posts_500:,} 500, {posts_hang:,} hang, "
              "{posts_reset:,} reset, {posts_slow_body:,} slow body"),
    ("duplicates", "{duplicate_posts:,} POSTs of an attempt already POSTed ("
                   "{unrecorded_posts:,} never recorded, {fenced_attempts:,} fenced late results)"),
    ("",  "by answer: {duplicate_posts_ok:,} ok, {duplicate_posts_500:,} 500, "
          "{duplicate_posts_hang:,} hang, {duplicate_posts_reset:,} reset, "
          "{duplicate_posts_slow_body:,} slow body"),
    ("2xx twice", "{deliveries_2xx_more_than_once:,} deliveries got a 2xx more than once"),
    ("kills", "{kills:,} SIGKILLs; claims held by the killed worker: {claims_held_at_kills:,} "
              "in all, at most {max_held_at_a_kill:,} at one kill"),
    ("bound", "{unrecorded_posts:,} POSTs never recorded, each checked against the claims "
              "its killed worker held; at most {max_duplicates_from_a_kill:,} from one kill"),
    ("", "{duplicate_posts:,} duplicates vs kills x concurrency = "
         "{kills_times_concurrency:,}: {within_bound}"),
    ("outage", "PostgreSQL down {outage_seconds} s with {in_flight_at_outage:,} claims in flight"),
    ("freeze", "broker frozen {freeze_seconds} s; events stored meanwhile: {stored_while_frozen}"),
    ("consumer", "{batches_not_stored:,} batches not stored (read again), "
                 "{commits_refused:,} offset commits refused (batch read again)"),
    ("offsets", "committed {committed} / end {end} ({messages_in_topic:,} messages, "
                "{messages_resent_by_producer:,} resent by the producer)"),
    ("workers", "{workers} x {concurrency} concurrency; exit codes on SIGTERM at the end "
                "{worker_exit_codes}"),
    ("survived", "the same worker processes throughout: {workers_survived}"),
    ("recovered", "{stale_claims_recovered:,} claims recovered as stale by the workers' sweep"),
    ("circuits", "{circuits_opened:,} circuits opened (closed -> open) by the breaker"),
    ("slow", "{slow_timeouts:,} answers too late for the {http_timeout:g} s timeout, recorded "
             "as timeouts "
             "({attempts_never_read:,} requests the receiver never read in time)"),
    ("topic", "{messages_produced:,} messages produced: {good_produced:,} events among "
              "{poison_produced:,} poison messages"),
    ("quarantine", "{quarantined:,} messages quarantined, by reason: {quarantine_reasons}"),
    ("latency", "produced -> first POST: p50 {latency_p50_s} s, p99 {latency_p99_s} s, "
                "max {latency_max_s} s (the first events wait for the group to form)"),
    ("endpoints", "{hostile_kinds} hostile endpoints x {per_kind:,} deliveries each: "
                  "{deliveries:,} deliveries, {attempts:,} attempts"),
    ("durations", "longest attempt {max_duration_ms:,} ms; timeout {timeout_ms:,} ms, "
                  "bound {duration_bound_ms:,} ms"),
    ("memory", "worker peak RSS {rss_start_mb} MiB once started, {rss_peak_mb} MiB at the end "
               "(bound {rss_bound_mb:g} MiB)"),
    ("redirects", "{internal_connections} connections reached the internal target"),
    ("targets", "{targets} targets ({hosts} hosts x {schemes} schemes) x {rounds} events: "
                "{deliveries:,} deliveries, {failed:,} failed"),
    ("blocked", "{blocked:,} of {attempts:,} attempts blocked, by reason: {reasons}"),
    ("listener", "{listener_connections} connections seen on any local address "
                 "(it saw {control_connections} of 2 control connections)"),
    ("sender", "{connections_opened} connections opened by the workers' sender"),
    ("secrets", "{secrets_checked} secrets ({secret_configs} configs created with a secret "
                "given or minted, then rotated; and refused ones) and {tokens_checked} tokens"),
    ("searched", "{api_responses:,} API answers ({api_bytes:,} bytes) and {log_lines:,} debug "
                 "log lines of {log_files} processes"),
    ("echoes", "{echoed_signatures:,} signatures echoed by the endpoint, in the API's answers"),
    ("leaks", "{leaks} secrets or tokens found"),
    ("elapsed", "{elapsed_seconds} s"),
)
KIND_HEADER = (f"  {'endpoint':<18} {'deliv.':>6} {'attempts':>8} {'max ms':>7} {'conns':>6}  "
               "outcomes -> ends; error")


def report(name: str, verdict: Verdict) -> str:
    """Return the readable report of one scenario."""
    counts = {"succeeded": 0, "failed": 0, "cancelled": 0, **verdict.counts}
    if "kills_times_concurrency" in counts:
        over = counts["duplicate_posts"] - counts["kills_times_concurrency"]
        counts["within_bound"] = ("within" if over <= 0 else
                                  f"over by {over:,} (answers waiting to be recorded count too)")
    lines = [f"chaos: {name}"]
    for label, text in LINES:
        with contextlib.suppress(KeyError):
            lines.append(f"  {label:<11} {text.format(**counts)}")
    if "kinds" in counts:
        lines += [KIND_HEADER, *(_kind_line(kind, line) for kind, line in counts["kinds"].items())]
    if verdict.ok:
        lines.append("  verdict     OK: every check passed")
    else:
        lines.append("  verdict     FAILED")
        for kind, examples in verdict.problems.items():
            lines.append(f"    {verdict.problem_counts[kind]:>6} x {kind}")
            lines.extend(f"             {example}" for example in examples)
    return "\n".join(lines)


def _kind_line(kind: str, line: dict) -> str:
    outcomes = ", ".join(f"{n:,} {outcome}" for outcome, n in line["outcomes"].items())
    ends = ", ".join(f"{n:,} {status}" for status, n in line["ends"].items())
    error = (line["error"] or "-")[:70]
    return (f"  {kind:<18} {line['deliveries']:>6,} {line['attempts']:>8,} "
            f"{line['max_duration_ms']:>7,} {line['connections']:>6,}  {outcomes} -> {ends}; "
            f"{error}")
