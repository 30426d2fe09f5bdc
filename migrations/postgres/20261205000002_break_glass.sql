-- Break-glass: an admin approving alone past the policy's quorum tells every admin and the
-- compliance role on every channel, so notifications take a new reason.
alter table notifications drop constraint notifications_reason_check,
    add constraint notifications_reason_check
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback',
                          'break_glass'));
