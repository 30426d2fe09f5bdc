//! The compliance officer's reads of the trail: a page of a selection, newest first, with
//! keyset cursors; the trail of one proposal and its command; the chain's head and latest
//! checkpoint. Reads never write (recording a denied page or an export is the caller's
//! choice, through [`Services::record_security`]).
//!
//! A page walks one index by seq and stops after [`TRAIL_PAGE`] matches. Where the index
//! walked cannot answer every filter, it looks at most [`SCAN_BUDGET`] entries and says how
//! far it got, so a page never costs more than that however rare the matches (see
//! [`crate::storage::audit_query`]).

use crate::domain::access::UseCase;
use crate::domain::principal::Principal;
use time::OffsetDateTime;
use uuid::Uuid;

use super::error::ServiceError;
use super::services::Services;
use crate::audit::chain::Head;
use crate::audit::checkpoint::Checkpoint;
use crate::storage::ReadConn;
use crate::storage::audit::{self};
use crate::storage::audit_query::{self, Selection, SeqRange, TrailEvent, Walk};
use crate::storage::commands::CommandRecord;
use crate::storage::proposals::ProposalRecord;

/// Events per page.
pub const TRAIL_PAGE: i64 = 50;
/// Most index entries one page looks at when the index walked does not answer every filter.
pub const SCAN_BUDGET: i64 = 5_000;
/// How long after its time an event may be committed at the latest. An event's time is taken
/// when its change is recorded and its seq when the change commits, so seq order and time order
/// differ by up to this much; a time range is widened by it before it bounds seqs, and `at` is
/// checked exactly on the walk.
pub const COMMIT_LAG: time::Duration = time::Duration::seconds(30);

/// Where a page starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// The newest events.
    Newest,
    /// The oldest events.
    Oldest,
    /// Events older than this seq, newest first.
    Before(i64),
    /// Events newer than this seq, oldest first.
    After(i64),
}

impl Cursor {
    fn window(self, bounds: SeqRange) -> (SeqRange, Walk) {
        match self {
            Cursor::Newest => (bounds, Walk::Older),
            Cursor::Oldest => (bounds, Walk::Newer),
            Cursor::Before(s) => (
                SeqRange {
                    before: Some(bounds.before.map_or(s, |b| b.min(s))),
                    ..bounds
                },
                Walk::Older,
            ),
            Cursor::After(s) => (
                SeqRange {
                    after: bounds.after.max(s),
                    ..bounds
                },
                Walk::Newer,
            ),
        }
    }
}

/// A page of events with the cursors to its neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct TrailPage {
    /// The events, newest first.
    pub events: Vec<TrailEvent>,
    /// `before` of the next older page, if there may be one.
    pub older: Option<i64>,
    /// `after` of the next newer page, if there may be one.
    pub newer: Option<i64>,
    /// When the page holds fewer matches than it could because it stopped looking: the seq it
    /// looked as far as.
    pub searched_to: Option<i64>,
}

impl TrailPage {
    /// Cuts the rows read (walk order, up to a page and one) into a page. `edge`: how far a
    /// budgeted walk looked, when it used its whole budget.
    fn new(mut rows: Vec<TrailEvent>, cursor: Cursor, walk: Walk, edge: Option<i64>) -> Self {
        let full = rows.len() > TRAIL_PAGE as usize;
        rows.truncate(TRAIL_PAGE as usize);
        let last = rows.last().map(|e| e.event.seq);
        let first = rows.first().map(|e| e.event.seq);
        let onward = if full { last } else { edge };
        let searched_to = (!full).then_some(edge).flatten();
        let back = match cursor {
            Cursor::Before(s) => Some(first.unwrap_or(s - 1)),
            Cursor::After(s) => Some(first.unwrap_or(s.saturating_add(1))),
            Cursor::Newest | Cursor::Oldest => None,
        };
        let (older, newer) = match walk {
            Walk::Older => (onward, back),
            Walk::Newer => {
                rows.reverse();
                (back, onward)
            }
        };
        TrailPage {
            events: rows,
            older,
            newer,
            searched_to,
        }
    }
}

/// The chain's head and its latest signed checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainState {
    /// The head.
    pub head: Head,
    /// The latest checkpoint, if any was signed.
    pub checkpoint: Option<Checkpoint>,
}

/// One proposal's timeline: the proposal, its command, a page of their trail, and the event
/// that recorded its submission (with the policy and rule that routed it).
#[derive(Debug, Clone)]
pub struct ProposalTimeline {
    /// The proposal.
    pub proposal: ProposalRecord,
    /// Its command, once queued.
    pub command: Option<CommandRecord>,
    /// A page of its trail and its command's.
    pub trail: TrailPage,
    /// Its `proposal.submitted` event.
    pub submitted: Option<TrailEvent>,
}

impl Services {
    /// One page of the events `sel` selects, from `cursor`.
    pub async fn trail_page(
        &self,
        who: &Principal,
        sel: &Selection,
        cursor: Cursor,
    ) -> Result<TrailPage, ServiceError> {
        self.authorize(who, UseCase::ReadTrail)?;
        let mut read = self.read().await?;
        let bounds = time_bounds(&mut read, sel).await?;
        let (range, walk) = cursor.window(bounds);
        if range.is_empty() {
            return Ok(TrailPage::new(Vec::new(), cursor, walk, None));
        }
        let (range, edge) = if sel.is_exact_walk() {
            (range, None)
        } else {
            budgeted(&mut read, sel, range, walk).await?
        };
        let rows = audit_query::page(read.conn(), sel, range, walk, TRAIL_PAGE + 1).await?;
        Ok(TrailPage::new(rows, cursor, walk, edge))
    }

    /// Proposal `id`'s timeline as `who` reads it, from `cursor` on; `None` when there is
    /// none or it is out of `who`'s reach. A reader of the whole trail (`audit.read`) reads a
    /// proposal's timeline as `proposal.view` holds them: another domain's is not found.
    pub async fn proposal_timeline(
        &self,
        who: &Principal,
        id: Uuid,
        cursor: Cursor,
    ) -> Result<Option<ProposalTimeline>, ServiceError> {
        self.authorize(who, UseCase::ReadTrail)?;
        let Some(proposal) = self.reachable(who, UseCase::ViewProposal, id).await? else {
            return Ok(None);
        };
        let command = self.command_row(id).await?;
        let trail = (self.proposal_trail(id, command.as_ref().map(|c| c.id), cursor)).await?;
        let submitted = self.proposal_event(id, "proposal.submitted").await?;
        Ok(Some(ProposalTimeline {
            proposal,
            command,
            trail,
            submitted,
        }))
    }

    /// One page of the trail of proposal `id` and of its command, from `cursor`, for a use
    /// case that has decided who may read it.
    pub(super) async fn proposal_trail(
        &self,
        id: Uuid,
        command: Option<Uuid>,
        cursor: Cursor,
    ) -> Result<TrailPage, ServiceError> {
        let proposal = id.to_string();
        let command = command.map(|c| c.to_string());
        let mut subjects = vec![("proposal", proposal.as_str())];
        if let Some(c) = &command {
            subjects.push(("command", c.as_str()));
        }
        let (range, walk) = cursor.window(SeqRange::default());
        let mut read = self.read().await?;
        let rows =
            audit_query::subjects_page(read.conn(), &subjects, range, walk, TRAIL_PAGE + 1).await?;
        Ok(TrailPage::new(rows, cursor, walk, None))
    }

    /// The first event of `kind` about proposal `id` (e.g. its `proposal.submitted`).
    async fn proposal_event(
        &self,
        id: Uuid,
        kind: &str,
    ) -> Result<Option<TrailEvent>, ServiceError> {
        let mut read = self.read().await?;
        Ok(audit_query::first_of_kind(read.conn(), "proposal", &id.to_string(), kind).await?)
    }

    /// The seq of the chain's head (0 for an empty trail): it moves with every state change.
    pub async fn trail_head(&self) -> Result<i64, ServiceError> {
        let mut read = self.read().await?;
        Ok(audit::head(read.conn()).await?.0.seq)
    }

    /// The chain's head and latest signed checkpoint.
    pub async fn chain_state(&self, who: &Principal) -> Result<ChainState, ServiceError> {
        self.authorize(who, UseCase::ReadTrail)?;
        let mut read = self.read().await?;
        let (head, _) = audit::head(read.conn()).await?;
        let checkpoint = audit::latest_checkpoint(read.conn()).await?;
        Ok(ChainState { head, checkpoint })
    }

    /// The seqs a selection's time range can reach (the whole trail without one).
    pub(super) async fn selection_bounds(&self, sel: &Selection) -> Result<SeqRange, ServiceError> {
        let mut read = self.read().await?;
        time_bounds(&mut read, sel).await
    }
}

/// The seqs within which every event of `sel`'s time range lies: the last event, by time,
/// written [`COMMIT_LAG`] before `from` was committed before any event at or after `from`; the
/// first written `COMMIT_LAG` after `until` was committed after every event before `until`.
async fn time_bounds(read: &mut ReadConn, sel: &Selection) -> Result<SeqRange, ServiceError> {
    let mut range = SeqRange::default();
    if let Some(from) = sel.from {
        // A bound beyond the representable times is no bound at all.
        range.after = match from.checked_sub(COMMIT_LAG) {
            Some(t) => audit_query::seq_before_time(read.conn(), t)
                .await?
                .unwrap_or(0),
            None => 0,
        };
    }
    if let Some(until) = sel.until {
        range.before = match until.checked_add(COMMIT_LAG) {
            Some(t) => audit_query::seq_from_time(read.conn(), t).await?,
            None => None,
        };
    }
    Ok(range)
}

/// Narrows `range` to the stretch [`SCAN_BUDGET`] entries of the driving index reach, and
/// says where that stretch ends when the budget ran out before the range did.
async fn budgeted(
    read: &mut ReadConn,
    sel: &Selection,
    range: SeqRange,
    walk: Walk,
) -> Result<(SeqRange, Option<i64>), ServiceError> {
    let (seen, edge) = audit_query::scan_edge(read.conn(), sel, range, walk, SCAN_BUDGET).await?;
    let Some(edge) = edge.filter(|_| seen >= SCAN_BUDGET) else {
        return Ok((range, None));
    };
    let narrowed = match walk {
        Walk::Older => SeqRange {
            after: edge - 1,
            ..range
        },
        Walk::Newer => SeqRange {
            before: Some(edge + 1),
            ..range
        },
    };
    Ok((narrowed, Some(edge)))
}

/// The time `days` whole UTC days before the start of `now`'s day, plus one: the start of a
/// window of `days` days ending today.
pub fn window_start(now: OffsetDateTime, days: i64) -> OffsetDateTime {
    let today = now
        .to_offset(time::UtcOffset::UTC)
        .replace_time(time::Time::MIDNIGHT);
    today - time::Duration::days(days - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::ChainedEvent;
    use crate::storage::audit_query::Facets;

    fn event(seq: i64) -> TrailEvent {
        TrailEvent {
            event: ChainedEvent {
                seq,
                id: Uuid::nil(),
                at: OffsetDateTime::UNIX_EPOCH,
                actor_kind: "system".into(),
                actor: "t".into(),
                kind: "k".into(),
                subject_type: "s".into(),
                subject_id: "1".into(),
                before_status: None,
                after_status: None,
                details: serde_json::Value::Null,
                hash: String::new(),
            },
            facets: Facets::default(),
            prev_hash: None,
        }
    }

    fn seqs(p: &TrailPage) -> Vec<i64> {
        p.events.iter().map(|e| e.event.seq).collect()
    }

    #[test]
    fn a_full_page_points_past_its_last_row_and_back_to_where_it_came_from() {
        let rows: Vec<_> = (0..=TRAIL_PAGE).map(|i| event(200 - i)).collect();
        let page = TrailPage::new(rows, Cursor::Before(201), Walk::Older, None);
        assert_eq!(page.events.len(), TRAIL_PAGE as usize);
        assert_eq!(page.older, Some(151));
        assert_eq!(page.newer, Some(200));
        assert_eq!(page.searched_to, None);

        let newest = TrailPage::new(vec![event(3), event(2)], Cursor::Newest, Walk::Older, None);
        assert_eq!((newest.older, newest.newer), (None, None));
    }

    #[test]
    fn a_newer_page_is_shown_newest_first() {
        let page = TrailPage::new(
            vec![event(11), event(12)],
            Cursor::After(10),
            Walk::Newer,
            None,
        );
        assert_eq!(seqs(&page), vec![12, 11]);
        assert_eq!((page.older, page.newer), (Some(11), None));
    }

    #[test]
    fn a_page_that_ran_out_of_budget_continues_where_it_stopped_looking() {
        let page = TrailPage::new(vec![event(90)], Cursor::Newest, Walk::Older, Some(40));
        assert_eq!((page.older, page.searched_to), (Some(40), Some(40)));
        let empty = TrailPage::new(Vec::new(), Cursor::Before(100), Walk::Older, Some(40));
        assert_eq!((empty.older, empty.newer), (Some(40), Some(99)));
    }

    #[test]
    fn cursors_narrow_the_time_bounds() {
        let bounds = SeqRange {
            after: 10,
            before: Some(100),
        };
        assert_eq!(
            Cursor::Before(50).window(bounds),
            (
                SeqRange {
                    after: 10,
                    before: Some(50)
                },
                Walk::Older
            )
        );
        assert_eq!(Cursor::Before(500).window(bounds).0.before, Some(100));
        assert_eq!(Cursor::After(5).window(bounds).0.after, 10);
        assert_eq!(Cursor::After(50).window(bounds).0.after, 50);
    }

    #[test]
    fn windows_start_at_midnight() {
        let now = time::macros::datetime!(2026-11-23 15:30 UTC);
        assert_eq!(
            window_start(now, 30),
            time::macros::datetime!(2026-10-25 0:00 UTC)
        );
    }
}
