-- Indexes no statement reads cost the one writer on every insert (each is one more b-tree to
-- descend and one more page to write per proposal). `proposals_by_agent` serves nothing that
-- `(agent, idempotency_key)` and `proposals_by_agent_tool` do not; SQLite names the index each
-- queue page walks (`indexed by`, src/storage/queue.rs) and never walks these three, which
-- PostgreSQL's planner keeps for its own choices.
drop index if exists proposals_by_agent;
drop index if exists queue_by_agent_domain;
drop index if exists queue_gdpr_by_risk;
drop index if exists queue_hipaa_by_risk;
