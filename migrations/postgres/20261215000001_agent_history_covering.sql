-- The proposal page's agent history counts the statuses of up to 1,000 of an agent's earlier
-- proposals for the same tool (src/storage/history.rs). With the status, and the domain a
-- limited reader filters by, in the index, that walk reads the index alone instead of a table
-- row for each (1,000 lookups once an agent has used a tool 1,000 times: 0.6-1.4 ms of the
-- page at 100,000 proposals, where its p99 had doubled from 1,000).
drop index if exists proposals_by_agent_tool;
create index proposals_by_agent_tool on proposals (agent, tool_name, seq, status, domain);
