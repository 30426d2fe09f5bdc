-- Agents' webhooks. An agent token may carry a callback URL and the secret that signs what is
-- sent there (kept as written: the server must sign with it; it is shown once, at creation).
-- Every status change of a proposal submitted with that token queues one delivery, in the
-- transaction that makes the change; the dispatcher sends it and records each attempt.
alter table api_tokens add column webhook_url text;
alter table api_tokens add column webhook_secret text;
-- The token a proposal was submitted with (null before this migration).
alter table proposals add column token_id blob;

create table webhook_deliveries (
    id blob primary key,
    token_id blob not null references api_tokens (id),
    proposal_id blob not null,
    url text not null,
    body text not null,
    created_at text not null,
    state text not null check (state in ('pending', 'delivered', 'failed')),
    attempts integer not null default 0,
    -- Due at (pending); while an attempt runs, when it may be taken again if it never reports.
    next_attempt_at text,
    last_attempt_at text,
    last_status integer,
    last_error text
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at)
    where state = 'pending';
create index webhook_deliveries_recent on webhook_deliveries (created_at);

create table webhook_attempts (
    delivery_id blob not null references webhook_deliveries (id),
    attempt integer not null,
    at text not null,
    status integer,
    error text,
    took_ms integer not null,
    primary key (delivery_id, attempt)
);
