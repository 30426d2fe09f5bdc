-- Audit details are kept as the canonical (RFC 8785) text their hash covers: `json` stores text
-- as given, where `jsonb` re-prints it (spaces, keys by length), so `audit verify` had to parse
-- and re-canonicalise every row. Rows written before keep jsonb's printing; verify reads both.
-- A table rewrite, not an update: the append-only triggers do not fire, and no value changes.
alter table audit_events alter column details type json using details::json;
