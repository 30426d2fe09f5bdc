-- An agent may withdraw a proposal while it waits (an MCP client's `tasks/cancel` on the
-- gateway): status `withdrawn`, which never executes.
alter table proposals drop constraint proposals_status_check;
alter table proposals add constraint proposals_status_check check (status in
    ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
     'outcome_unknown', 'timed_out', 'changes_requested', 'withdrawn'));
