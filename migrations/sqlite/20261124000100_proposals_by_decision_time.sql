-- The compliance officer's charts read the decisions of the last weeks: time to decision per
-- domain, rejections per tool, decisions per reviewer. This index finds them without reading
-- every proposal ever made.
create index proposals_by_decided_at on proposals (decided_at) where decided_at is not null;
