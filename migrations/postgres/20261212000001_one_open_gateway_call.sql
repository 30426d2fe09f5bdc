-- One open copy of a gateway call at a time, held by the database. A gateway call's idempotency
-- key starts with `gateway-` and a digest of its agent's tool, arguments and definition (41
-- characters in all: `CallInput::key_prefix`); the same call made again while one is open
-- (pending, or approved or accepted and not yet run) gets that proposal. Two calls made at
-- once, on one instance or two, each looked for an open one before either had committed, found
-- none, and both were proposed; now the second's insert meets the first's row here, and its
-- submission answers the first. This index also serves the lookup, in place of one over every
-- open proposal's key.
drop index proposals_open_by_agent;
create unique index proposals_open_gateway_call
    on proposals (agent, substr(idempotency_key, 1, 41))
    where substr(idempotency_key, 1, 8) = 'gateway-'
        and status in ('pending', 'approved', 'accepted');
