-- ping --
-- Answer at once: the database is there and the connection works
SELECT 1

-- start_session --
-- Set the session's time zone to UTC (a transaction-mode pooler carries it to every server session it lends this client) and return the client port the server sees: the connection's own local port when nothing stands in between, another when a pooler does
SET TIME ZONE 'UTC';
SELECT inet_client_port()
