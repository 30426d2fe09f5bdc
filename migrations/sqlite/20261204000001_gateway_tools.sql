-- The MCP gateway's pinned tool definitions: the first definition seen of each tool, its
-- hash, and a later different one an admin has not accepted yet (the tool is not served and
-- its calls are refused until then).
create table gateway_tools (
    name text primary key,
    upstream text not null,
    pinned_sha256 text not null,
    pinned_definition text not null,
    offered_sha256 text,
    offered_definition text,
    first_seen_at text not null,
    updated_at text not null
);
