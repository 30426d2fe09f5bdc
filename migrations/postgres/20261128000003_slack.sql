-- Deciding from Slack: a person's Slack user id maps them to their Countersign account, and
-- every signed Slack request is remembered for as long as its timestamp is accepted, so a
-- replay of it is refused (on every instance sharing the database).
alter table users add column slack_id text;
create unique index users_by_slack_id on users (slack_id) where slack_id is not null;
create table slack_requests (
    signature text primary key,
    at timestamptz not null
);
