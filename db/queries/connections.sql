-- ping --
-- Answer at once: the database is there and the connection works
SELECT 1

-- start_session --
-- Set the session's time zone to UTC (a transaction-mode pooler carries it to every server session it lends this client) and return the process id of the server session that runs it: the one announced at start-up when nothing but bytes stand in between, another when a pooler answered the start-up
SET TIME ZONE 'UTC';
SELECT pg_backend_pid()
