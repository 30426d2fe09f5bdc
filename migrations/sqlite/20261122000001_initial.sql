-- Countersign's initial schema on SQLite. Ids are UUIDs (16-byte blobs), times RFC 3339 text,
-- JSON as text. `seq` columns give a gap-free insertion order that never depends on clocks.

create table users (
    id blob primary key,
    username text not null unique,
    password_hash text not null,
    role text not null check (role in ('admin', 'reviewer', 'compliance')),
    created_at text not null,
    disabled_at text
);

create table api_tokens (
    id blob primary key,
    kind text not null check (kind in ('agent', 'executor')),
    name text not null,
    token_hash text not null unique,
    created_at text not null,
    revoked_at text
);
create index api_tokens_by_name on api_tokens (kind, name);

create table proposals (
    seq integer primary key autoincrement,
    id blob not null unique,
    agent text not null,
    idempotency_key text not null,
    request_hash text not null,
    status text not null check (status in
        ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed')),
    authorization_state text not null check (authorization_state in
        ('none', 'user_claimed', 'authenticated', 'validated', 'confirmed')),
    risk_level text not null check (risk_level in ('low', 'medium', 'high')),
    tool_name text not null,
    domain text not null,
    route text not null check (route in ('accept', 'ask', 'defer', 'refuse')),
    routing text not null,
    contract text not null,
    created_at text not null,
    updated_at text not null,
    -- A pending proposal not decided by then expires (never approved); null: never.
    expires_at text,
    decision text check (decision in ('approved', 'rejected')),
    decided_by text,
    decided_at text,
    decision_reason text,
    unique (agent, idempotency_key)
);
create index proposals_by_status on proposals (status, seq);
create index proposals_by_agent on proposals (agent, seq);

-- Approvals of proposals whose policy asks for several approvers; one row per reviewer.
create table approvals (
    proposal_id blob not null references proposals (id),
    reviewer text not null,
    at text not null,
    primary key (proposal_id, reviewer)
);

create table commands (
    seq integer primary key autoincrement,
    id blob not null unique,
    proposal_id blob not null unique references proposals (id),
    status text not null check (status in ('queued', 'leased', 'succeeded', 'failed')),
    spec text not null,
    attempts integer not null default 0,
    -- Executors the policy lets run this tool, as ',a,b,'; null means any executor.
    allowed_executors text,
    leased_by text,
    lease_token_hash text,
    lease_expires_at text,
    result text,
    error text,
    created_at text not null,
    updated_at text not null,
    completed_at text
);
create index commands_by_status on commands (status, seq);

create table audit_events (
    seq integer primary key autoincrement,
    id blob not null unique,
    at text not null,
    actor_kind text not null check (actor_kind in ('user', 'agent', 'executor', 'system')),
    actor text not null,
    action text not null,
    subject_type text not null,
    subject_id text not null,
    before_status text,
    after_status text,
    details text not null
);
create index audit_events_by_subject on audit_events (subject_type, subject_id, seq);

-- The audit trail is append-only: the database itself refuses changes.
create trigger audit_events_no_update before update on audit_events
begin
    select raise(abort, 'audit_events is append-only');
end;
create trigger audit_events_no_delete before delete on audit_events
begin
    select raise(abort, 'audit_events is append-only');
end;
