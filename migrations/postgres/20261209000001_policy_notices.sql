-- A break-glass activation at the shell is loud: every admin and compliance officer is told on
-- every channel. The shell that activates does not know the channels (they are `serve`'s), so
-- the activation row is its own outbox: `told_at` is set by the serving instance that queues
-- its notifications, once. A notification is now about a proposal or a policy activation,
-- never both. Activations made before this migration are counted as told (nobody is paged
-- about last month).
alter table policy_activations add column told_at timestamptz;
update policy_activations set told_at = activated_at;

alter table notifications alter column proposal_id drop not null,
    add column policy_activation bigint,
    add constraint notifications_subject
        check ((proposal_id is null) <> (policy_activation is null)),
    drop constraint notifications_reason_check,
    add constraint notifications_reason_check
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback',
                          'break_glass', 'policy_break_glass'));
