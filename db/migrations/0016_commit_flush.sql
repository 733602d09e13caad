-- A sequence whose only use is to make a transaction's commit wait for the disk.
--
-- The claim and the record commit without waiting for the WAL flush (synchronous_commit off
-- for that one transaction), so that the health rows they lock are free the moment they end
-- rather than after a disk sync; the worker then runs `SELECT setval('commit_flush', 1)` in
-- a transaction of its own, which always writes WAL and commits synchronously, and so waits
-- until everything before it — the claim or the record — is on disk. Only then does the
-- worker act on what it committed. A sequence, because setval writes in place and takes no
-- row lock: no two flushes wait for each other but through the disk itself.
CREATE SEQUENCE IF NOT EXISTS commit_flush;
