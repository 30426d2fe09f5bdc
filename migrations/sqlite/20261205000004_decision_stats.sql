-- Decision insights at any scale: each final decision counted once, at decision time, per
-- UTC day, reviewer and domain, with its time from submission to decision in one of fifteen
-- buckets (upper bounds 2 s, 5 s, 10 s, 30 s, 1 min, 2 min, 5 min, 10 min, 30 min, 1 h, 2 h,
-- 4 h, 8 h, 1 d, then more) and whether it came sooner than the proposal could be read (its
-- text at 50 characters a second, at least 2 s). A window's figures sum a few thousand rows,
-- never the decisions themselves. Decisions taken before this migration are counted here.
create table decision_stats (
    day text not null,
    reviewer text not null,
    domain text not null,
    decisions integer not null default 0,
    approved integer not null default 0,
    fast integer not null default 0,
    b0 integer not null default 0,
    b1 integer not null default 0,
    b2 integer not null default 0,
    b3 integer not null default 0,
    b4 integer not null default 0,
    b5 integer not null default 0,
    b6 integer not null default 0,
    b7 integer not null default 0,
    b8 integer not null default 0,
    b9 integer not null default 0,
    b10 integer not null default 0,
    b11 integer not null default 0,
    b12 integer not null default 0,
    b13 integer not null default 0,
    b14 integer not null default 0,
    primary key (day, reviewer, domain)
);
insert into decision_stats (day, reviewer, domain, decisions, approved, fast, b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14)
select day, decided_by, domain, count(*),
    sum(case when decision = 'approved' then 1 else 0 end),
    sum(case when secs < max(chars / 50, 2) then 1 else 0 end),
    sum(case when secs <= 2 then 1 else 0 end),
    sum(case when secs > 2 and secs <= 5 then 1 else 0 end),
    sum(case when secs > 5 and secs <= 10 then 1 else 0 end),
    sum(case when secs > 10 and secs <= 30 then 1 else 0 end),
    sum(case when secs > 30 and secs <= 60 then 1 else 0 end),
    sum(case when secs > 60 and secs <= 120 then 1 else 0 end),
    sum(case when secs > 120 and secs <= 300 then 1 else 0 end),
    sum(case when secs > 300 and secs <= 600 then 1 else 0 end),
    sum(case when secs > 600 and secs <= 1800 then 1 else 0 end),
    sum(case when secs > 1800 and secs <= 3600 then 1 else 0 end),
    sum(case when secs > 3600 and secs <= 7200 then 1 else 0 end),
    sum(case when secs > 7200 and secs <= 14400 then 1 else 0 end),
    sum(case when secs > 14400 and secs <= 28800 then 1 else 0 end),
    sum(case when secs > 28800 and secs <= 86400 then 1 else 0 end),
    sum(case when secs > 86400 then 1 else 0 end)
from (select substr(decided_at, 1, 10) as day, decided_by, domain, decision, length(contract) as chars,
        cast((julianday(decided_at) - julianday(created_at)) * 86400 as integer) as secs
    from proposals where decided_by is not null and decided_at is not null
        and decision is not null) as d
group by day, decided_by, domain;
