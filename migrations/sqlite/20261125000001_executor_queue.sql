-- The executor queue, hardened (see src/domain/command/mod.rs for the life of a command):
-- new command and proposal statuses, rollback commands linked to the command they undo,
-- retry backoff, the approval window, run time limits, people's resolutions, executor token
-- scopes and paused tools.
--
-- SQLite cannot change a CHECK constraint in place, so `proposals` and `commands` are rebuilt
-- (create, copy, drop, rename). Foreign keys are checked at commit, when the new tables carry
-- the old names again.
pragma defer_foreign_keys = on;

create table proposals_new (
    seq integer primary key autoincrement,
    id blob not null unique,
    agent text not null,
    idempotency_key text not null,
    request_hash text not null,
    status text not null check (status in
        ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
         'outcome_unknown', 'timed_out')),
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
    expires_at text,
    decision text check (decision in ('approved', 'rejected')),
    decided_by text,
    decided_at text,
    decision_reason text,
    erased_at text,
    erased_by text,
    erasure_reason text,
    unique (agent, idempotency_key)
);
insert into proposals_new (seq, id, agent, idempotency_key, request_hash, status,
    authorization_state, risk_level, tool_name, domain, route, routing, contract, created_at,
    updated_at, expires_at, decision, decided_by, decided_at, decision_reason, erased_at,
    erased_by, erasure_reason)
select seq, id, agent, idempotency_key, request_hash, status, authorization_state, risk_level,
    tool_name, domain, route, routing, contract, created_at, updated_at, expires_at, decision,
    decided_by, decided_at, decision_reason, erased_at, erased_by, erasure_reason
from proposals;

create table commands_new (
    seq integer primary key autoincrement,
    id blob not null unique,
    proposal_id blob not null references proposals (id),
    -- `action` runs the approved proposal; `rollback` undoes the command `rollback_of`.
    kind text not null default 'action' check (kind in ('action', 'rollback')),
    rollback_of blob unique references commands (id),
    tool_name text not null,
    status text not null check (status in ('queued', 'leased', 'succeeded', 'failed',
        'outcome_unknown', 'timed_out', 'expired', 'awaiting_approval', 'dismissed')),
    spec text not null,
    attempts integer not null default 0,
    allowed_executors text,
    leased_by text,
    lease_token_hash text,
    lease_expires_at text,
    -- Not leased before this (a retry's backoff).
    available_at text not null,
    -- Not leased for the first time after this (the approval window); null: no window.
    execute_by text,
    -- The running attempt must report by this (execution.timeout_ms); null: no limit.
    run_deadline text,
    -- How the last attempt ended without success: failed, lease_lapsed or timed_out, and
    -- what the executor said of its side effect.
    interruption text,
    side_effect text check (side_effect in ('none', 'possible', 'done')),
    result text,
    error text,
    -- A person's settlement of an unknown outcome.
    resolution text check (resolution in ('succeeded', 'failed', 'release')),
    resolved_by text,
    resolved_at text,
    resolution_reason text,
    created_at text not null,
    updated_at text not null,
    completed_at text
);
insert into commands_new (seq, id, proposal_id, kind, tool_name, status, spec, attempts,
    allowed_executors, leased_by, lease_token_hash, lease_expires_at, available_at, result,
    error, created_at, updated_at, completed_at)
select seq, id, proposal_id, 'action', json_extract(spec, '$.tool.name'), status, spec, attempts,
    allowed_executors, leased_by, lease_token_hash, lease_expires_at, created_at, result, error,
    created_at, updated_at, completed_at
from commands;

drop table commands;
drop table proposals;
alter table proposals_new rename to proposals;
alter table commands_new rename to commands;

create index proposals_by_status on proposals (status, seq);
create index proposals_by_agent on proposals (agent, seq);
create index proposals_by_decided_at on proposals (decided_at) where decided_at is not null;
create index commands_by_status on commands (status, seq);
create unique index commands_one_action on commands (proposal_id) where kind = 'action';

-- An executor token's tool scope: comma-separated globs; null for a token without one.
alter table api_tokens add column tool_scope text;

-- The kill switch: tools (exact names or globs, `*` for all) no executor may lease.
create table paused_tools (
    pattern text primary key,
    paused_by text not null,
    paused_at text not null
);
