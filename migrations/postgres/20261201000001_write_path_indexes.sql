-- `proposals_by_agent` serves no statement that `(agent, idempotency_key)` and
-- `proposals_by_agent_tool` do not, and costs the writer one more index per proposal.
drop index if exists proposals_by_agent;
