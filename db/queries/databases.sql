-- drop_database --
-- Drop a database of the server (the name filled in as an identifier), closing its sessions; nothing when there is none
DROP DATABASE IF EXISTS {name} WITH (FORCE)

-- create_database --
-- Create an empty database on the server (the name filled in as an identifier)
CREATE DATABASE {name}

-- count_deliveries_where --
-- Count the deliveries that a condition written by the caller matches (the tests' and the benchmarks' look from outside)
SELECT count(*) FROM deliveries WHERE {condition}
