-- The reviewer's desk at scale (issue 10): the queue filters and sorts on columns of its own
-- (risk as a rank, the GDPR and HIPAA flags), walked by partial indexes over pending rows
-- only; a reviewer may be limited to domains; a reviewer may ask for changes, and a revised
-- proposal names the one it supersedes.
--
-- SQLite cannot change a CHECK constraint in place, so `proposals` is rebuilt (create, copy,
-- drop, rename). Foreign keys are checked at commit, when the new table carries the old name.
pragma defer_foreign_keys = on;

create table proposals_new (
    seq integer primary key autoincrement,
    id blob not null unique,
    agent text not null,
    idempotency_key text not null,
    request_hash text not null,
    status text not null check (status in
        ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
         'outcome_unknown', 'timed_out', 'changes_requested')),
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
    unique (agent, idempotency_key)
);
insert into proposals_new (seq, id, agent, idempotency_key, request_hash, status,
    authorization_state, risk_level, risk_rank, gdpr, hipaa, tool_name, domain, route, routing,
    contract, created_at, updated_at, expires_at, decision, decided_by, decided_at,
    decision_reason, erased_at, erased_by, erasure_reason)
select seq, id, agent, idempotency_key, request_hash, status, authorization_state, risk_level,
    case risk_level when 'high' then 3 when 'medium' then 2 else 1 end,
    coalesce(json_extract(contract, '$.compliance_context.gdpr'), 0) = 1,
    coalesce(json_extract(contract, '$.compliance_context.hipaa'), 0) = 1,
    tool_name, domain, route, routing, contract, created_at, updated_at, expires_at, decision,
    decided_by, decided_at, decision_reason, erased_at, erased_by, erasure_reason
from proposals;
drop table proposals;
alter table proposals_new rename to proposals;

create index proposals_by_status on proposals (status, seq);
create index proposals_by_agent on proposals (agent, seq);
create index proposals_by_decided_at on proposals (decided_at) where decided_at is not null;
create index proposals_by_supersedes on proposals (supersedes) where supersedes is not null;
-- The queue: one walk per filter or order, over pending rows only. Each index also carries
-- every other filter column and the expiry, so a second filter and the liveness check are
-- answered from the index, and only matching rows are read from the table.
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

-- The domains a reviewer may see and decide (a JSON array); null: every domain.
alter table users add column domains text;
