-- Web sessions that have ended are pruned a batch at a time with the other operational rows;
-- each batch reads only ended ones through an index on when each ends. The table is the session
-- store's (tower-sessions' sqlx store, which creates it the same way when it is missing),
-- created here too so that the index has a table whichever runs first.
create schema if not exists tower_sessions;
create table if not exists tower_sessions.session
(
    id text primary key not null,
    data bytea not null,
    expiry_date timestamptz not null
);
create index if not exists session_by_end on tower_sessions.session (expiry_date);
