//! The review queue: pending proposals, oldest first.

use leptos::prelude::*;

use super::{Flash, error_view};
use crate::dto::QueueItem;
use crate::server::list_queue;

/// The queue page.
#[component]
pub fn QueuePage() -> impl IntoView {
    let queue = Resource::new(|| (), |_| list_queue());
    view! {
        <h1>"Waiting for a decision"</h1>
        <Flash/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match queue.await {
                    Ok(items) if items.is_empty() => view! {
                        <p class="empty" data-testid="queue-empty">"Nothing is waiting for review."</p>
                    }
                    .into_any(),
                    Ok(items) => view! { <QueueTable items/> }.into_any(),
                    Err(e) => error_view(e),
                }
            })}
        </Suspense>
    }
}

#[component]
fn QueueTable(items: Vec<QueueItem>) -> impl IntoView {
    view! {
        <table class="queue">
            <thead>
                <tr>
                    <th>"Intent"</th>
                    <th>"Tool"</th>
                    <th>"Target"</th>
                    <th>"Affected data"</th>
                    <th>"Rollback"</th>
                    <th>"Risk"</th>
                    <th>"Waiting"</th>
                </tr>
            </thead>
            <tbody>
                {items
                    .into_iter()
                    .map(|item| {
                        let href = format!("/proposals/{}", item.id);
                        let risk_class = format!("risk risk-{}", item.risk);
                        let targets = if item.targets.is_empty() { "—".to_owned() } else { item.targets.join(", ") };
                        view! {
                            <tr data-testid="queue-row" data-proposal-id=item.id.clone()>
                                <td>
                                    <a href=href>{item.summary}</a>
                                    <div class="sub">{item.proposed_by} " · " {item.route}</div>
                                </td>
                                <td data-testid="queue-tool"><code>{item.tool}</code></td>
                                <td data-testid="queue-target">{targets}</td>
                                <td data-testid="queue-affected"><code class="preview">{item.affected}</code></td>
                                <td data-testid="queue-rollback">{item.rollback}</td>
                                <td data-testid="queue-risk"><span class=risk_class>{item.risk}</span></td>
                                <td data-testid="queue-age">{item.age}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}
