-- Reaching the right reviewers. A person may be notified by email (`users.email`); email is a
-- per-person channel, so a notification queued for it at commit names nobody (`recipient` is
-- '') and the dispatcher expands it into one row per reviewer who may decide (role, domains)
-- or per member of an escalation tier (`audience`), each with its own window. New reasons: a
-- proposal about to expire, an escalation to the next tier, a rollback task opened.
-- `proposal_alerts` remembers which expiry warnings and escalation tiers were raised, once each.
-- Every index costs the single writer on each insert: admins' list reads newest first by id
-- (UUIDv7, time-ordered) instead of an index on `created_at`, and the index by message only
-- holds rows a send has claimed.
alter table users add column email text;

create table notifications_new (
    id blob primary key,
    channel text not null check (channel in ('slack', 'teams', 'webhook', 'email')),
    reason text not null
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback')),
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
    attempts, next_attempt_at, last_attempt_at, last_status, last_error)
select id, channel, reason, proposal_id, created_at, state, message_id, attempts,
    next_attempt_at, last_attempt_at, last_status, last_error from notifications;
drop table notifications;
alter table notifications_new rename to notifications;
create index notifications_due on notifications (channel, recipient, next_attempt_at)
    where state = 'pending';
create index notifications_sent on notifications (channel, recipient, last_attempt_at)
    where state = 'sent';
create index notifications_message on notifications (message_id) where message_id is not null;

create table proposal_alerts (
    proposal_id blob not null,
    kind text not null check (kind in ('expiring', 'escalated')),
    tier integer not null,
    audience text,
    at text not null,
    primary key (proposal_id, kind, tier)
);
