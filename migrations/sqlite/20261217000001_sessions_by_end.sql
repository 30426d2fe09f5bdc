-- Web sessions that have ended are pruned a batch at a time with the other operational rows;
-- each batch reads only ended ones through an index on when each ends (as the pruning compares
-- it, julianday). The table is the session store's (tower-sessions' sqlx store, which creates
-- it the same way when it is missing), created here too so that the index has a table
-- whichever runs first.
create table if not exists tower_sessions
(
    id text primary key not null,
    data blob not null,
    expiry_date integer not null
);
create index if not exists tower_sessions_by_end on tower_sessions (julianday(expiry_date));
