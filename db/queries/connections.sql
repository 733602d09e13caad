-- ping --
-- Answer at once: the database is there and the connection works
SELECT 1
