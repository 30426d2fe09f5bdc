-- The queue's slow combinations on PostgreSQL, found by scripts/bench-queue over 100,000
-- pending proposals: a regime in the risk order (the planner walked the whole risk index,
-- filtering for the regime) and an agent with a domain (it walked the primary key). Each gets
-- the index that answers it in its own order.
create index queue_gdpr_by_risk on proposals (risk_rank desc, seq)
    include (agent, domain, tool_name, route, gdpr, hipaa, expires_at) where status = 'pending' and gdpr;
create index queue_hipaa_by_risk on proposals (risk_rank desc, seq)
    include (agent, domain, tool_name, route, gdpr, hipaa, expires_at) where status = 'pending' and hipaa;
create index queue_by_agent_domain on proposals (agent, domain, seq)
    include (tool_name, risk_rank, route, gdpr, hipaa, expires_at) where status = 'pending';
