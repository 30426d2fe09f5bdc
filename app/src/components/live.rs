//! Live pages: a callback each time the server says something a page shows changed
//! (server-sent events), so the page refetches it. In the browser only; the server renders the
//! page as it is, and without JavaScript a reload shows the same.
//!
//! - [`use_desk_changes`]: the queue, on `GET /events/desk` (anything on the desk moved).
//! - [`use_proposal_changes`]: one proposal's page, on `GET /events/proposals/{id}` (its
//!   status moved: a colleague decided, it expired, its command reported).

#[cfg(feature = "hydrate")]
use leptos::prelude::*;
use leptos::prelude::{ReadSignal, signal};

/// Calls `on_change` on every `change` event of the desk's event stream (in the browser, while
/// the calling component is mounted), e.g. to refetch a resource. `seen()` is the trail's head
/// the page's rows were read at (none until they are): the server says at once when the desk
/// has moved since. The signal says whether the stream is open: from then on every change on
/// the desk is told.
pub fn use_desk_changes(
    seen: impl Fn() -> Option<i64> + Send + Sync + 'static,
    on_change: impl Fn() + Clone + Send + Sync + 'static,
) -> ReadSignal<bool> {
    use_changes(
        move || seen().map(|head| format!("/events/desk?seen={head}")),
        on_change,
    )
}

/// Calls `on_change` each time the status of the proposal `shown()` names moves from the
/// status it gives (the one the page shows: the server says at once when it already differs,
/// e.g. after a reconnect), in the browser, while the calling component is mounted. A new id or
/// status opens a new stream. The signal says whether the stream is open (never, on the
/// server): a page may mark itself live with it.
pub fn use_proposal_changes(
    shown: impl Fn() -> Option<(String, Option<String>)> + Send + Sync + 'static,
    on_change: impl Fn() + Clone + Send + Sync + 'static,
) -> ReadSignal<bool> {
    use_changes(
        move || {
            let (id, seen) = shown().filter(|(id, _)| !id.is_empty())?;
            Some(match seen {
                Some(status) => format!("/events/proposals/{id}?seen={status}"),
                None => format!("/events/proposals/{id}"),
            })
        },
        on_change,
    )
}

/// Listens to the event stream at `path()` (none while it is `None`) for `change` events;
/// the signal is `true` while the stream is open.
fn use_changes(
    path: impl Fn() -> Option<String> + Send + Sync + 'static,
    on_change: impl Fn() + Clone + Send + Sync + 'static,
) -> ReadSignal<bool> {
    let (open, set_open) = signal(false);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        set_open.set(false);
        let Some(path) = path() else {
            return;
        };
        let Ok(source) = web_sys::EventSource::new(&path) else {
            return;
        };
        let changed = on_change.clone();
        let on_change = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| changed());
        let _ =
            source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| set_open.set(true));
        let _ = source.add_event_listener_with_callback("open", on_open.as_ref().unchecked_ref());
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| set_open.set(false));
        let _ = source.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
        // The listeners live as long as the source, which the cleanup closes (also before the
        // effect runs again for another path).
        on_change.forget();
        on_open.forget();
        on_error.forget();
        let source = send_wrapper::SendWrapper::new(source);
        on_cleanup(move || source.close());
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (path, on_change, set_open);
    open
}
