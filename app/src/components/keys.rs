//! The queue's keyboard: `j`/`k` move down and up the rows, `Enter` opens the selected
//! proposal, `a` opens it at its approve form and `r` at its reject form (a decision is always
//! taken on the page that shows all of the proposal), `x` chooses it for a batch decision (or
//! takes it out), `?` lists the keys. Keys typed into a
//! form field, or with a modifier held, are the field's.

use leptos::prelude::*;

/// The keys and what they do, as the help lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("j", "next proposal"),
    ("k", "previous proposal"),
    ("Enter", "open the selected proposal"),
    ("a", "open it at its approve form"),
    ("r", "open it at its reject form"),
    ("x", "choose it for a batch decision, or take it out"),
    ("?", "show or hide these keys"),
];

/// Listens for the queue's keys while the page is mounted; `help` toggles on `?`. Returns a
/// signal that turns true once the keys listen (in the browser, after hydration), which the
/// page shows as `data-ready` so tests and scripts know when keys work.
pub fn use_queue_keys(help: RwSignal<bool>) -> ReadSignal<bool> {
    let (ready, set_ready) = signal(false);
    #[cfg(feature = "hydrate")]
    {
        let selected = StoredValue::new(None::<u32>);
        let handle = window_event_listener(leptos::ev::keydown, move |e| {
            on_key(&e, selected, help);
        });
        on_cleanup(move || handle.remove());
        Effect::new(move |_| set_ready.set(true));
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (help, set_ready);
    ready
}

#[cfg(feature = "hydrate")]
fn on_key(e: &web_sys::KeyboardEvent, selected: StoredValue<Option<u32>>, help: RwSignal<bool>) {
    use wasm_bindgen::JsCast;
    if e.ctrl_key() || e.meta_key() || e.alt_key() {
        return;
    }
    let in_field = e
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|el| match el.tag_name().as_str() {
            // A row's checkbox takes no typing: the queue's keys go on working from it.
            "INPUT" => el.get_attribute("type").as_deref() != Some("checkbox"),
            "SELECT" | "TEXTAREA" => true,
            _ => false,
        });
    if in_field {
        return;
    }
    let Ok(rows) = document().query_selector_all("tr[data-testid=\"queue-row\"]") else {
        return;
    };
    let count = rows.length();
    let row = |i: u32| {
        rows.item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
    };
    let current = selected.get_value().filter(|i| *i < count);
    let select = |i: u32| {
        if let Some(old) = current.and_then(row) {
            let _ = old.class_list().remove_1("selected");
            let _ = old.remove_attribute("aria-current");
        }
        if let Some(el) = row(i) {
            let _ = el.class_list().add_1("selected");
            let _ = el.set_attribute("aria-current", "true");
            if let Ok(Some(link)) = el.query_selector("a") {
                if let Ok(link) = link.dyn_into::<web_sys::HtmlElement>() {
                    let _ = link.focus();
                }
            }
        }
        selected.set_value(Some(i));
    };
    let open = |suffix: &str| {
        let href = current
            .and_then(row)
            .and_then(|el| el.get_attribute("data-proposal-id"))
            .map(|id| format!("/proposals/{id}{suffix}"));
        if let Some(href) = href {
            let _ = window().location().set_href(&href);
        }
    };
    match e.key().as_str() {
        "j" if count > 0 => select(current.map_or(0, |i| (i + 1).min(count - 1))),
        "k" if count > 0 => select(current.map_or(0, |i| i.saturating_sub(1))),
        "Enter" if current.is_some() => {
            e.prevent_default();
            open("");
        }
        "x" => {
            let checkbox = (current.and_then(row))
                .and_then(|el| el.query_selector("input[type=checkbox]").ok().flatten())
                .and_then(|el| el.dyn_into::<web_sys::HtmlInputElement>().ok());
            if let Some(checkbox) = checkbox {
                checkbox.set_checked(!checkbox.checked());
            }
        }
        "a" => open("?act=approve"),
        "r" => open("?act=reject"),
        "?" => help.update(|h| *h = !*h),
        "Escape" => help.set(false),
        _ => {}
    }
}

/// The list of keys, shown while `help` is on.
#[component]
pub fn KeyHelp(
    /// Whether the list shows.
    help: RwSignal<bool>,
) -> impl IntoView {
    view! {
        <Show when=move || help.get()>
            <section class="key-help" data-testid="key-help" aria-label="Keyboard shortcuts">
                <h2>"Keys"</h2>
                <dl>
                    {KEYS
                        .iter()
                        .map(|(key, what)| view! { <dt><kbd>{*key}</kbd></dt><dd>{*what}</dd> })
                        .collect_view()}
                </dl>
            </section>
        </Show>
    }
}
