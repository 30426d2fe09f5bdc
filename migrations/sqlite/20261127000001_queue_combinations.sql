-- The same migration as PostgreSQL's: SQLite names its index per query (`indexed by`, see
-- src/storage/queue.rs) and does not need these, but both schemas keep the same indexes.
create index queue_gdpr_by_risk on proposals (risk_rank desc, seq, agent, domain, tool_name, route, gdpr, hipaa, expires_at)
    where status = 'pending' and gdpr;
create index queue_hipaa_by_risk on proposals (risk_rank desc, seq, agent, domain, tool_name, route, gdpr, hipaa, expires_at)
    where status = 'pending' and hipaa;
create index queue_by_agent_domain on proposals (agent, domain, seq, tool_name, risk_rank, route, gdpr, hipaa, expires_at)
    where status = 'pending';
