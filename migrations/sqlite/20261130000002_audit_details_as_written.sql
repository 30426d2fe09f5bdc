-- PostgreSQL's audit details become `json` (kept as written) in this migration. SQLite already
-- keeps text as written; from now on it is the canonical (RFC 8785) text the hash covers.
select 1;
