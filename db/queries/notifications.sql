-- listen_for_workers --
-- Subscribe this session to the deliveries-due and config-changed notifications and return the two channels' names (run in autocommit: a LISTEN takes effect when its transaction commits)
SELECT deliveries_due_channel(), config_changed_channel(),
       listen_deliveries_due(), listen_config_changed()
