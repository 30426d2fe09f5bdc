//! Proposing a candidate: its TOML, a reason, and how far back its backtest replays. An
//! invalid candidate comes back to `/policy` (`?error=policy_invalid`) with every error and its
//! line kept in the proposer's session for that one page (never in the address, where anyone
//! could write a link that shows other words), shown here as text.

use crate::server::policy::ProposePolicy;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;

/// The errors of the candidate just refused, one per line.
#[component]
pub fn InvalidLines(errors: Vec<String>) -> impl IntoView {
    (!errors.is_empty()).then(|| {
        let items = (errors.into_iter())
            .map(|l| view! { <li><code>{l}</code></li> })
            .collect_view();
        view! {
            <section class="policy-errors">
                <h2>"What is wrong with the candidate"</h2>
                <ul data-testid="policy-errors">{items}</ul>
            </section>
        }
    })
}

/// The form to propose a candidate (admins).
#[component]
pub fn ProposeForm(csrf: String) -> impl IntoView {
    view! {
        <section id="propose" class="policy-propose">
            <h2>"Propose a candidate"</h2>
            <p class="sub">
                "Paste the whole policy (TOML). It is validated, stored, and backtested against the \
                 decisions recorded in the period you choose; another admin must approve it before it \
                 governs anything."
            </p>
            <form method="post" action=ProposePolicy::url() class="propose-form">
                <input type="hidden" name="csrf_token" value=csrf/>
                <label>"Policy (TOML) "
                    <textarea name="text" required rows="14" spellcheck="false" class="code"
                        data-testid="policy-propose-text"></textarea>
                </label>
                <label>"Why "
                    <textarea name="reason" required maxlength="1000" rows="2"
                        data-testid="policy-propose-reason"></textarea>
                </label>
                <label>"Backtest against the decisions of the last "
                    <select name="since" data-testid="policy-propose-since">
                        <option value="7d">"7 days"</option>
                        <option value="30d" selected>"30 days"</option>
                        <option value="90d">"90 days"</option>
                    </select>
                </label>
                <button type="submit" class="approve" data-testid="policy-propose-submit">"Propose"</button>
            </form>
        </section>
    }
}
