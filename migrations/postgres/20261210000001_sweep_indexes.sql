-- The sweeps read only what is due, however long the history (pending proposals already have
-- `queue_by_expiry`): an index on a queued command's deadline over the commands it can end.
-- Before, the sweep read every queued command, once a second.
create index commands_expiring on commands (execute_by)
    where status = 'queued' and attempts = 0 and execute_by is not null;
