-- Reviewers' notifications. Every status change that needs a person (a proposal starts waiting
-- for a decision; a command's outcome becomes unknown) queues one row per configured channel
-- (Slack, Teams, a generic webhook), in the transaction that makes the change. The dispatcher
-- sends at most one message per channel per window: the first at once, the rest folded into a
-- digest at the window's end (`message_id` names the send that carried a row).
create table notifications (
    id blob primary key,
    channel text not null check (channel in ('slack', 'teams', 'webhook')),
    reason text not null check (reason in ('waiting', 'outcome_unknown')),
    proposal_id blob not null,
    created_at text not null,
    state text not null check (state in ('pending', 'sent', 'failed')),
    message_id blob,
    attempts integer not null default 0,
    next_attempt_at text,
    last_attempt_at text,
    last_status integer,
    last_error text
);
create index notifications_due on notifications (channel, next_attempt_at)
    where state = 'pending';
create index notifications_sent on notifications (channel, last_attempt_at)
    where state = 'sent';
create index notifications_recent on notifications (created_at);
