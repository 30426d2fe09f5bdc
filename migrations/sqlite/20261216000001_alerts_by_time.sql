-- Pruning alerts past their retention reads only the old ones: an index on when each was
-- raised, as the pruning compares it (julianday). Before, each batch read the table from its
-- start, and the last batch of a sweep every alert.
create index proposal_alerts_by_time on proposal_alerts (julianday(at));
