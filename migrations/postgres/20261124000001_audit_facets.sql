-- Facets of audit events, for the compliance officer's filters: copies of the `details` keys of
-- the same name (`agent`, `tool`, `domain`, `risk`, `decision`), set by Countersign when a row is
-- appended. They are an index, not evidence: the hash covers `details`, and
-- `countersign audit verify` checks that every facet equals its key in `details`.
alter table audit_events add column agent text;
alter table audit_events add column tool text;
alter table audit_events add column domain text;
alter table audit_events add column risk text;
alter table audit_events add column decision text;
create index audit_events_by_tool on audit_events (tool, seq) where tool is not null;
create index audit_events_by_agent on audit_events (agent, seq) where agent is not null;
create index audit_events_by_domain on audit_events (domain, seq) where domain is not null;
create index audit_events_by_decision on audit_events (decision, seq) where decision is not null;
create index audit_events_by_risk on audit_events (risk, seq) where risk is not null;
create index audit_events_by_time on audit_events (at);

-- The key of the keyed hashes that stand in for parameter values and free text in audit rows
-- (HMAC-SHA256): the same value gives the same hash within one installation, and without the
-- key a short value cannot be guessed from its hash. Written once, at the first start.
create table audit_salt (
    id integer primary key check (id = 1),
    salt bytea not null
);
