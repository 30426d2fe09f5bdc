-- Every definition the MCP gateway has seen of a tool, by its hash: a proposal records the
-- hash of the definition its call was made against, and the reviewer's page shows that one
-- even after an admin accepted another.
create table gateway_definitions (
    sha256 text primary key,
    definition text not null,
    first_seen_at timestamptz not null
);
insert into gateway_definitions (sha256, definition, first_seen_at)
    select pinned_sha256, pinned_definition, first_seen_at from gateway_tools
    on conflict do nothing;
insert into gateway_definitions (sha256, definition, first_seen_at)
    select offered_sha256, offered_definition, updated_at from gateway_tools
    where offered_sha256 is not null
    on conflict do nothing;
