-- `/insights` counts the proposals that expired in its window, per domain: an index over the
-- expired rows alone, by deadline and domain. Before, the count read the whole table in
-- parallel (the approved proposals whose command's window passed are expired too): at
-- 1,260,000 proposals, 545,000 of them expired, 0.5 s a page.
create index proposals_expired_by_time on proposals (expires_at, domain)
    where status = 'expired';
