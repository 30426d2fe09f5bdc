-- A gateway call looks for the same agent's same call still open (pending, or approved or
-- accepted and not yet run) before it is proposed again: an index over the open proposals
-- alone, by agent and key. Before, the lookup read every proposal the agent ever made.
create index proposals_open_by_agent on proposals (agent, idempotency_key, seq)
    where status in ('pending', 'approved', 'accepted');
