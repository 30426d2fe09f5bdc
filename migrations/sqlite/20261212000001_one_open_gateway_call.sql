-- One open copy of a gateway call at a time, held by the database. A gateway call's idempotency
-- key is `gateway-`, 32 hex digits of a digest of its agent's tool, arguments and definition,
-- `-` and the proposal's id: 77 characters (`gateway::call::call_prefix` checks the same shape,
-- so an agent's own keys that merely start alike are left alone). The same call made again
-- while one is open (pending, or approved or accepted and not yet run) gets that proposal. Two
-- calls made at once, on one instance or two, each looked for an open one before either had
-- committed, found none, and both were proposed; now the second's insert meets the first's row
-- here, and its submission answers the first. This index also serves the lookup, in place of
-- one over every open proposal's key.
--
-- A database that already holds two open copies of one call (that race could make them) fails
-- here: withdraw, reject or let expire all but one, then start again.
drop index proposals_open_by_agent;
create unique index proposals_open_gateway_call
    on proposals (agent, substr(idempotency_key, 1, 41))
    where length(idempotency_key) = 77 and substr(idempotency_key, 1, 8) = 'gateway-'
        and substr(idempotency_key, 9, 32) not glob '*[^0-9a-f]*'
        and substr(idempotency_key, 41, 1) = '-'
        and status in ('pending', 'approved', 'accepted');
