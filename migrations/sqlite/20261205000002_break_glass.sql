-- Break-glass: an admin approving alone past the policy's quorum tells every admin and the
-- compliance role on every channel, so notifications take a new reason. SQLite cannot alter a
-- check constraint: the table is rebuilt with its rows and indexes.
create table notifications_new (
    id blob primary key,
    channel text not null check (channel in ('slack', 'teams', 'webhook', 'email')),
    reason text not null
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback',
                          'break_glass')),
    proposal_id blob not null,
    created_at text not null,
    state text not null check (state in ('pending', 'sent', 'failed', 'expanded')),
    message_id blob,
    attempts integer not null default 0,
    next_attempt_at text,
    last_attempt_at text,
    last_status integer,
    last_error text,
    recipient text not null default '',
    audience text
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
