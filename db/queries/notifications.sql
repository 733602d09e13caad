-- listen_for_workers --
-- Subscribe this session to the deliveries-due, config-changed and operational-events notifications and return the three channels' names (run in autocommit: a LISTEN takes effect when its transaction commits)
SELECT deliveries_due_channel() AS due, config_changed_channel() AS changed,
       operational_events_channel() AS announced,
       listen_deliveries_due(), listen_config_changed(), listen_operational_events()
