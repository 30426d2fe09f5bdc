//! Live pages: a callback each time the server says the desk changed
//! (`GET /events/desk`, server-sent events), so a page refetches what it shows. In the browser
//! only; the server renders the page as it is, and without JavaScript a reload shows the
//! same.

#[cfg(feature = "hydrate")]
use leptos::prelude::*;

/// Calls `on_change` on every `change` event of the desk's event stream (in the browser, while
/// the calling component is mounted), e.g. to refetch a resource.
pub fn use_desk_changes(on_change: impl Fn() + Clone + Send + Sync + 'static) {
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::closure::Closure;
        let Ok(source) = web_sys::EventSource::new("/events/desk") else {
            return;
        };
        let changed = on_change.clone();
        let on_change = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| changed());
        let _ =
            source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // The listener lives as long as the source, which the cleanup closes.
        on_change.forget();
        let source = send_wrapper::SendWrapper::new(source);
        on_cleanup(move || source.close());
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = on_change;
}
