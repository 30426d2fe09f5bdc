//! Live pages: a signal that moves each time the server says the desk changed
//! (`GET /events/desk`, server-sent events), so a page refetches what it shows. In the browser
//! only; the server renders the page as it is, and without JavaScript a reload shows the
//! same.

use leptos::prelude::*;

/// A counter that moves on every `change` event of the desk's event stream. Use it as a
/// resource's source to refetch on change.
pub fn use_desk_changes() -> ReadSignal<u32> {
    let (changes, set_changes) = signal(0u32);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        let Ok(source) = web_sys::EventSource::new("/events/desk") else {
            return;
        };
        let on_change = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            set_changes.update(|n| *n = n.wrapping_add(1));
        });
        let _ =
            source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // The listener lives as long as the source, which the cleanup closes.
        on_change.forget();
        let source = send_wrapper::SendWrapper::new(source);
        on_cleanup(move || source.close());
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = set_changes;
    changes
}
