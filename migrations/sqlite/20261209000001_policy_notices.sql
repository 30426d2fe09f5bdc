-- A break-glass activation at the shell is loud: every admin and compliance officer is told on
-- every channel. The shell that activates does not know the channels (they are `serve`'s), so
-- the activation row is its own outbox: `told_at` is set by the serving instance that queues
-- its notifications, once. A notification is now about a proposal or a policy activation,
-- never both. Activations made before this migration are counted as told (nobody is paged
-- about last month). SQLite cannot alter a column or a check: the table is rebuilt.
alter table policy_activations add column told_at text;
update policy_activations set told_at = activated_at;

create table notifications_new (
    id blob primary key,
    channel text not null check (channel in ('slack', 'teams', 'webhook', 'email')),
    reason text not null
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback',
                          'break_glass', 'policy_break_glass')),
    proposal_id blob,
    created_at text not null,
    state text not null check (state in ('pending', 'sent', 'failed', 'expanded')),
    message_id blob,
    attempts integer not null default 0,
    next_attempt_at text,
    last_attempt_at text,
    last_status integer,
    last_error text,
    recipient text not null default '',
    audience text,
    policy_activation integer,
    check ((proposal_id is null) <> (policy_activation is null))
);
insert into notifications_new (id, channel, reason, proposal_id, created_at, state, message_id,
    attempts, next_attempt_at, last_attempt_at, last_status, last_error, recipient, audience)
select id, channel, reason, proposal_id, created_at, state, message_id, attempts,
    next_attempt_at, last_attempt_at, last_status, last_error, recipient, audience
from notifications;
drop table notifications;
alter table notifications_new rename to notifications;
create index notifications_due on notifications (channel, recipient, next_attempt_at)
    where state = 'pending';
create index notifications_sent on notifications (channel, recipient, last_attempt_at)
    where state = 'sent';
create index notifications_message on notifications (message_id) where message_id is not null;
