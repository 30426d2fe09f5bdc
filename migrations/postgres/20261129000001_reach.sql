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

alter table notifications drop constraint notifications_channel_check,
    add constraint notifications_channel_check
        check (channel in ('slack', 'teams', 'webhook', 'email')),
    drop constraint notifications_reason_check,
    add constraint notifications_reason_check
        check (reason in ('waiting', 'outcome_unknown', 'expiring', 'escalated', 'rollback')),
    drop constraint notifications_state_check,
    add constraint notifications_state_check
        check (state in ('pending', 'sent', 'failed', 'expanded')),
    add column recipient text not null default '',
    add column audience text;
drop index notifications_due;
drop index notifications_sent;
drop index notifications_recent;
create index notifications_due on notifications (channel, recipient, next_attempt_at)
    where state = 'pending';
create index notifications_sent on notifications (channel, recipient, last_attempt_at)
    where state = 'sent';
create index notifications_message on notifications (message_id) where message_id is not null;

create table proposal_alerts (
    proposal_id uuid not null,
    kind text not null check (kind in ('expiring', 'escalated')),
    tier integer not null,
    audience text,
    at timestamptz not null,
    primary key (proposal_id, kind, tier)
);
