//! Gathering a group: the writer waits, briefly, for the callers its last group answered.
//!
//! Callers in a closed loop (executors that lease, report and lease again; an agent that checks
//! one tool call after another) split into cohorts under group commit. The callers a group
//! answers come back while the next group, of those who were waiting meanwhile, runs, so they
//! wait for the group after it. Eight executors so made groups of about four, and each group
//! paid the commit's fixed cost (its round trips and its fsync: on PostgreSQL about 1.8 ms
//! whether it held four changes or eight) for half the callers it could carry.
//!
//! So when a group starts with fewer changes than the writer expects, it waits for the rest, up
//! to [`WINDOW`]. It expects the changes that were waiting when the last group committed
//! (which it has, or which came meanwhile) and one for each change that group answered, but
//! never more than [`ENOUGH`]: a group that large already shares its commit widely, and
//! holding it back only idles the writer while requests queue (pre-tool-checks at 64
//! connections lost a fifth when every group waited for all 64). It expects nothing when its
//! first change came more than [`IDLE`] after the last commit: the callers answered then are
//! not looping back. So a lone caller, or the first after a pause, is never waited for. Changes
//! whose callers do not come back (an events-only record, traffic that does not loop) cost a
//! group at most the window, and each group expects only what the one before it answered.
//!
//! The wait blocks the writer's thread, so it ends as soon as the last change expected arrives
//! (tokio's timers resolve to 1 ms, over three times the window). Nothing else waits on that
//! thread's runtime between groups: no statement is in flight, and at most the closing of a
//! connection dropped after a failed group is delayed by the window.

use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

/// The longest a group waits for the changes it expects, from its first: about the time an
/// HTTP caller takes, on these two-core machines, from its answer to its next request reaching
/// the writer. (8 executors on PostgreSQL: 150 µs gained less than half of what 300 µs did; 1 ms
/// lost it again to the groups that waited for a caller who was not coming.)
pub(super) const WINDOW: Duration = Duration::from_micros(300);

/// The most changes a group waits for.
pub(super) const ENOUGH: usize = 16;

/// A first change later than this after the last commit finds the writer idle, not answered
/// callers coming back: its group waits for nothing. (The callers' turn-around is about 0.5 ms
/// on these machines, 1 ms in their slow hours.)
pub(super) const IDLE: Duration = Duration::from_millis(5);

/// How the writer gathers its groups.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gather {
    /// The longest a group waits for the changes it expects (zero: never).
    window: Duration,
    /// The most changes a group waits for.
    enough: usize,
    /// The changes waiting when the last group committed, plus those it answered.
    expected: usize,
    /// When the last group committed.
    committed_at: Option<Instant>,
}

impl Default for Gather {
    fn default() -> Self {
        Self::new(WINDOW, ENOUGH)
    }
}

impl Gather {
    /// Waiting up to `window` for up to `enough` changes.
    pub(super) fn new(window: Duration, enough: usize) -> Self {
        Self {
            window,
            enough,
            expected: 0,
            committed_at: None,
        }
    }

    /// Notes a group that committed (or failed) just now and answered `answered` changes, with
    /// `waiting` more handed over meanwhile.
    pub(super) fn committed(&mut self, answered: usize, waiting: usize) {
        self.committed_at(answered, waiting, Instant::now());
    }

    /// As [`Gather::committed`], at `at`.
    fn committed_at(&mut self, answered: usize, waiting: usize, at: Instant) {
        self.expected = answered + waiting;
        self.committed_at = Some(at);
    }

    /// Takes the next group into `batch` (empty), at most `max` changes: waits for a first
    /// change, then, while fewer are there than expected, for more, up to the window. Answers
    /// how many it took (0: every sender is gone).
    pub(super) async fn next<T>(
        &mut self,
        jobs: &mut mpsc::Receiver<T>,
        batch: &mut Vec<T>,
        max: usize,
    ) -> usize {
        if jobs.recv_many(batch, max).await == 0 {
            return 0;
        }
        let first = Instant::now();
        let looping = (self.committed_at).is_some_and(|at| first.duration_since(at) <= IDLE);
        let want = self.expected.min(self.enough).min(max);
        if looping && batch.len() < want && !self.window.is_zero() {
            wait_for(jobs, batch, want, first + self.window);
        }
        batch.len()
    }
}

/// Wakes the writer's thread where it is parked.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Takes changes into `batch` until it holds `want` or `deadline` passes, parking the thread
/// between arrivals.
fn wait_for<T>(jobs: &mut mpsc::Receiver<T>, batch: &mut Vec<T>, want: usize, deadline: Instant) {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    while batch.len() < want {
        let room = want - batch.len();
        // Unconstrained: the whole wait is within one poll of the writer's task, whose budget
        // of operations could run out and answer `Pending` with changes there to take.
        let mut receive = pin!(tokio::task::unconstrained(jobs.recv_many(batch, room)));
        // `Pending` only once the waker is registered: a change handed over from here on
        // unparks the thread (or makes its next park return at once).
        match receive.as_mut().poll(&mut cx) {
            Poll::Ready(0) => return,
            Poll::Ready(_) => continue,
            Poll::Pending => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        // Woken by the next change handed over, by the deadline, or spuriously: each polls
        // again.
        thread::park_timeout(deadline - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window no test should ever wait out: each checks that it took less, so a group that
    /// waits for it fails the test (a minute later).
    const LONG: Duration = Duration::from_secs(60);

    fn queue(n: usize) -> (mpsc::Sender<usize>, mpsc::Receiver<usize>) {
        let (send, receive) = mpsc::channel(64);
        for i in 0..n {
            send.try_send(i).expect("room");
        }
        (send, receive)
    }

    /// Returns once the receiver has taken everything queued on `send` (a group has started
    /// and taken what was waiting); panics if it never does.
    fn drained(send: &mpsc::Sender<usize>) {
        let started = Instant::now();
        while send.capacity() < send.max_capacity() {
            assert!(
                started.elapsed() < LONG,
                "the group never took what was waiting"
            );
            thread::yield_now();
        }
    }

    #[tokio::test]
    async fn a_lone_caller_is_never_waited_for() {
        let mut gather = Gather::new(LONG, ENOUGH);
        let (send, mut jobs) = queue(1);
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 1);
        gather.committed(1, 0);
        batch.clear();
        send.try_send(1).expect("room");
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 1);
        assert!(started.elapsed() < LONG);
    }

    #[tokio::test]
    async fn a_group_waits_for_the_callers_the_last_one_answered() {
        let mut gather = Gather::new(LONG, ENOUGH);
        // The last group answered four callers while four more were waiting.
        gather.committed(4, 4);
        let (send, mut jobs) = queue(4);
        // The four answered come back from another thread, once the group has taken the
        // four that were waiting (so only a group that waits can hold them).
        let back = thread::spawn(move || {
            drained(&send);
            for i in 4..8 {
                send.blocking_send(i).expect("open");
            }
            send
        });
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 8);
        assert_eq!(batch, (0..8).collect::<Vec<_>>());
        assert!(started.elapsed() < LONG);
        drop(back.join().expect("sent"));
    }

    #[tokio::test]
    async fn the_window_bounds_the_wait_for_callers_who_do_not_come() {
        let window = Duration::from_millis(30);
        let mut gather = Gather::new(window, ENOUGH);
        gather.committed(8, 0);
        let (send, mut jobs) = queue(3);
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 3);
        assert!(started.elapsed() >= window);
        // Those three are all the next group expects.
        let mut gather = Gather {
            window: LONG,
            ..gather
        };
        gather.committed(3, 0);
        batch.clear();
        for i in 0..3 {
            send.try_send(i).expect("room");
        }
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 3);
        assert!(started.elapsed() < LONG);
    }

    #[tokio::test]
    async fn after_a_pause_nothing_is_expected() {
        let mut gather = Gather::new(LONG, ENOUGH);
        // Eight answered, but long before the next change came.
        let long_ago = Instant::now()
            .checked_sub(IDLE * 10)
            .expect("an earlier instant");
        gather.committed_at(8, 0, long_ago);
        let (_send, mut jobs) = queue(1);
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 1);
        assert!(started.elapsed() < LONG);
    }

    #[tokio::test]
    async fn a_large_group_is_enough() {
        let mut gather = Gather::new(LONG, 16);
        gather.committed(40, 24);
        let (_send, mut jobs) = queue(16);
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 16);
        // Nor more than a group may hold.
        let mut gather = Gather::new(LONG, 16);
        gather.committed(8, 0);
        let (_send, mut jobs) = queue(4);
        batch.clear();
        assert_eq!(gather.next(&mut jobs, &mut batch, 4).await, 4);
        assert!(started.elapsed() < LONG);
    }

    #[tokio::test]
    async fn the_wait_ends_when_every_sender_is_gone() {
        let mut gather = Gather::new(LONG, ENOUGH);
        gather.committed(8, 0);
        let (send, mut jobs) = queue(2);
        // Gone only once the group has taken the two and waits for more.
        let gone = thread::spawn(move || {
            drained(&send);
            drop(send);
        });
        let mut batch = Vec::new();
        let started = Instant::now();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 2);
        assert!(started.elapsed() < LONG);
        gone.join().expect("dropped");
        batch.clear();
        assert_eq!(gather.next(&mut jobs, &mut batch, 512).await, 0);
    }
}
