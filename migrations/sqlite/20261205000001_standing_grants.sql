-- Standing grants: a reviewer's approval of one agent's calls of one tool, with exactly the
-- approved arguments (or named fields free, or numeric fields bounded), for a while and at most
-- so many uses. A later proposal inside a live grant is accepted under it (`grant:<id>`).
create table standing_grants (
    id blob primary key,
    agent text not null,
    tool_name text not null,
    tool_version text not null,
    domain text not null,
    proposal_id blob not null,
    granted_by text not null,
    -- The approved parameters, JSON.
    parameters text not null,
    -- JSON pointers whose values may differ, JSON array.
    free_fields text not null,
    -- [{"field": pointer, "max": number}], JSON array.
    bounds text not null,
    max_uses integer check (max_uses is null or max_uses > 0),
    uses integer not null default 0,
    state text not null check (state in ('live', 'used_up', 'expired', 'revoked')),
    created_at text not null,
    expires_at text not null,
    ended_at text,
    ended_by text
);
create index standing_grants_live on standing_grants (agent, tool_name) where state = 'live';
create index standing_grants_due on standing_grants (expires_at) where state = 'live';
