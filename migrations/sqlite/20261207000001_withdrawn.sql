-- An agent may withdraw a proposal while it waits (an MCP client's `tasks/cancel` on the
-- gateway): status `withdrawn`, which never executes.
--
-- SQLite cannot change a CHECK constraint in place, so `proposals` is rebuilt (create, copy,
-- drop, rename) with every index it had. Foreign keys are checked at commit, when the new
-- table carries the old name.
pragma defer_foreign_keys = on;

create table proposals_new (
    seq integer primary key autoincrement,
    id blob not null unique,
    agent text not null,
    idempotency_key text not null,
    request_hash text not null,
    status text not null check (status in
        ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
         'outcome_unknown', 'timed_out', 'changes_requested', 'withdrawn')),
    authorization_state text not null check (authorization_state in
        ('none', 'user_claimed', 'authenticated', 'validated', 'confirmed')),
    risk_level text not null check (risk_level in ('low', 'medium', 'high')),
    -- 1 low, 2 medium, 3 high: the queue's "most risky first" order.
    risk_rank integer not null check (risk_rank between 1 and 3),
    gdpr integer not null default 0 check (gdpr in (0, 1)),
    hipaa integer not null default 0 check (hipaa in (0, 1)),
    tool_name text not null,
    domain text not null,
    route text not null check (route in ('accept', 'ask', 'defer', 'refuse')),
    routing text not null,
    contract text not null,
    created_at text not null,
    updated_at text not null,
    expires_at text,
    decision text check (decision in ('approved', 'rejected', 'changes_requested')),
    decided_by text,
    decided_at text,
    decision_reason text,
    erased_at text,
    erased_by text,
    erasure_reason text,
    -- The proposal this one revises (after a reviewer asked for changes).
    supersedes blob references proposals (id),
    -- The agent token that submitted it.
    token_id blob,
    -- A reviewer's edit before approving (JSON).
    decision_edit text,
    unique (agent, idempotency_key)
);
insert into proposals_new (seq, id, agent, idempotency_key, request_hash, status,
    authorization_state, risk_level, risk_rank, gdpr, hipaa, tool_name, domain, route, routing,
    contract, created_at, updated_at, expires_at, decision, decided_by, decided_at,
    decision_reason, erased_at, erased_by, erasure_reason, supersedes, token_id, decision_edit)
select seq, id, agent, idempotency_key, request_hash, status, authorization_state, risk_level,
    risk_rank, gdpr, hipaa, tool_name, domain, route, routing, contract, created_at, updated_at,
    expires_at, decision, decided_by, decided_at, decision_reason, erased_at, erased_by,
    erasure_reason, supersedes, token_id, decision_edit
from proposals;
drop table proposals;
alter table proposals_new rename to proposals;

create index proposals_by_status on proposals (status, seq);
create index proposals_by_decided_at on proposals (decided_at) where decided_at is not null;
create index proposals_by_supersedes on proposals (supersedes) where supersedes is not null;
create index queue_by_agent on proposals (agent, seq, domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending';
create index queue_by_domain on proposals (domain, seq, agent, tool_name, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending';
create index queue_by_tool on proposals (tool_name, seq, agent, domain, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending';
create index queue_by_route on proposals (route, seq, agent, domain, tool_name, risk_rank, gdpr, hipaa, expires_at)
    where status = 'pending';
create index queue_by_risk on proposals (risk_rank desc, seq, agent, domain, tool_name, route, gdpr, hipaa, expires_at)
    where status = 'pending';
create index queue_by_expiry on proposals (expires_at, seq, agent, domain, tool_name, risk_rank, route, gdpr, hipaa)
    where status = 'pending';
create index queue_gdpr on proposals (seq, agent, domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending' and gdpr;
create index queue_hipaa on proposals (seq, agent, domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending' and hipaa;
create index proposals_by_agent_tool on proposals (agent, tool_name, seq);
