-- The proposal page's agent history (issue 10): an agent's earlier proposals for the same tool,
-- newest first, counted over a bounded window and listed a few at a time.
create index proposals_by_agent_tool on proposals (agent, tool_name, seq);
