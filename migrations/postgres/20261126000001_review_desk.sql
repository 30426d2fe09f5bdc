-- The reviewer's desk at scale (issue 10): the queue filters and sorts on columns of its own
-- (risk as a rank, the GDPR and HIPAA flags), walked by partial indexes over pending rows
-- only; a reviewer may be limited to domains; a reviewer may ask for changes, and a revised
-- proposal names the one it supersedes.

alter table proposals drop constraint proposals_status_check;
alter table proposals add constraint proposals_status_check check (status in
    ('pending', 'approved', 'rejected', 'accepted', 'refused', 'expired', 'succeeded', 'failed',
     'outcome_unknown', 'timed_out', 'changes_requested'));
alter table proposals drop constraint proposals_decision_check;
alter table proposals add constraint proposals_decision_check check (decision in
    ('approved', 'rejected', 'changes_requested'));

-- 1 low, 2 medium, 3 high: the queue's "most risky first" order.
alter table proposals add column risk_rank smallint;
alter table proposals add column gdpr boolean not null default false;
alter table proposals add column hipaa boolean not null default false;
update proposals set
    risk_rank = case risk_level when 'high' then 3 when 'medium' then 2 else 1 end,
    gdpr = coalesce((contract -> 'compliance_context' ->> 'gdpr')::boolean, false),
    hipaa = coalesce((contract -> 'compliance_context' ->> 'hipaa')::boolean, false);
alter table proposals alter column risk_rank set not null;
alter table proposals add constraint proposals_risk_rank_check check (risk_rank between 1 and 3);
-- The proposal this one revises (after a reviewer asked for changes).
alter table proposals add column supersedes uuid references proposals (id);

create index proposals_by_supersedes on proposals (supersedes) where supersedes is not null;
-- The queue: one walk per filter or order, over pending rows only. Each index also carries
-- every other filter column and the expiry, so a second filter and the liveness check are
-- answered from the index, and only matching rows are read from the table.
create index queue_by_agent on proposals (agent, seq)
    include (domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending';
create index queue_by_domain on proposals (domain, seq)
    include (agent, tool_name, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending';
create index queue_by_tool on proposals (tool_name, seq)
    include (agent, domain, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending';
create index queue_by_route on proposals (route, seq)
    include (agent, domain, tool_name, risk_rank, gdpr, hipaa, expires_at) where status = 'pending';
create index queue_by_risk on proposals (risk_rank desc, seq)
    include (agent, domain, tool_name, route, gdpr, hipaa, expires_at) where status = 'pending';
create index queue_by_expiry on proposals (expires_at, seq)
    include (agent, domain, tool_name, risk_rank, route, gdpr, hipaa) where status = 'pending';
create index queue_gdpr on proposals (seq)
    include (agent, domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending' and gdpr;
create index queue_hipaa on proposals (seq)
    include (agent, domain, tool_name, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending' and hipaa;

-- The domains a reviewer may see and decide; null: every domain.
alter table users add column domains jsonb;
