//! "What the executor will receive": every field of the command as a table, one row per field
//! and member, each row's `data-field` its JSON pointer in the command. Withheld values say
//! what they are and how long; personal data can be revealed (a form, audited).

use leptos::prelude::*;
use leptos::server_fn::ServerFn;

use crate::components::visible::{HiddenFlag, Shown};
use crate::dto::{CommandSheet, FieldRow, FieldValue};
use crate::server::RevealPersonalData;
use crate::time::{When, span};

/// Words for the command's top-level fields; others show their key.
fn label(key: &str) -> &str {
    match key {
        "tool" => "Tool",
        "parameters" => "Parameters",
        "target_refs" => "Targets",
        "constraints" => "Constraints",
        "preconditions" => "Preconditions",
        "execution" => "Execution limits",
        "blast_radius" => "Blast radius",
        "rollback_supported" => "Rollback supported",
        "rollback_plan" => "Rollback plan",
        "idempotency_key" => "Idempotency key",
        "domain" => "Domain",
        "allowed_executors" => "Allowed executors",
        "authorization_state" => "Authorization",
        "request_hash_sha256" => "Request hash (sha256)",
        "approved_by" => "Approved by",
        "approved_at" => "Approved at",
        other => other,
    }
}

/// `(= 30 s)` after a number of milliseconds, so limits read at a glance.
fn millis_hint(key: &str, literal: &str) -> Option<String> {
    let ms: u64 = literal.parse().ok()?;
    (key.ends_with("_ms") && ms >= 1_000).then(|| format!(" (= {})", span(ms / 1_000)))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The value cell of one row.
fn value_cell(row: &FieldRow) -> AnyView {
    match row.value.clone() {
        FieldValue::Group { members: 0, array } => {
            let empty = if array { "(empty list)" } else { "(empty)" };
            view! { <span class="v muted">{empty}</span> }.into_any()
        }
        FieldValue::Group { members, array } => {
            let what = if array {
                plural(members, "item", "items")
            } else {
                plural(members, "field", "fields")
            };
            view! { <span class="muted">{what}</span> }.into_any()
        }
        FieldValue::Text(t) if t.is_empty() => {
            view! { <span class="v muted">"(empty text)"</span> }.into_any()
        }
        FieldValue::Text(t) => view! { <span class="v text"><Shown text=t/></span> }.into_any(),
        FieldValue::Literal(l) => {
            let hint = millis_hint(&row.key, &l);
            view! { <code class="v">{l}</code><span class="muted">{hint}</span> }.into_any()
        }
        FieldValue::Time(at) => view! { <span class="v"><When at/></span> }.into_any(),
        FieldValue::Secret { chars } => view! {
            <span class="masked secret" data-masked="secret">
                "•••• secret (" {plural(chars, "character", "characters")} "), never shown"
            </span>
        }
        .into_any(),
        FieldValue::Withheld { chars } => view! {
            <span class="masked personal" data-masked="personal">
                "•••• personal data (" {plural(chars, "character", "characters")} ")"
            </span>
        }
        .into_any(),
        FieldValue::Revealed(t) => view! {
            <span class="v text revealed"><Shown text=t/></span>
            <span class="tag" data-masked="revealed">"revealed"</span>
        }
        .into_any(),
        FieldValue::OnApproval => {
            view! { <span class="muted" data-masked="on-approval">"set by the approval"</span> }
                .into_any()
        }
    }
}

fn field_row(row: FieldRow) -> impl IntoView {
    let class = format!("depth-{}", row.depth.min(8));
    let key = if row.depth == 0 {
        let words = label(&row.key).to_owned();
        let raw =
            (words != row.key).then(|| view! { " " <code class="muted">{row.key.clone()}</code> });
        view! { <span class="label">{words}</span>{raw} }.into_any()
    } else if row.index {
        view! { <code>"[" {row.key.clone()} "]"</code> }.into_any()
    } else {
        view! { <code><Shown text=row.key.clone()/></code> }.into_any()
    };
    let flag = view! { <HiddenFlag count=row.hidden testid="field-hidden"/> };
    let value = value_cell(&row);
    view! {
        <tr class=class data-field=row.pointer>
            <th scope="row">{key}</th>
            <td>{value}{flag}</td>
        </tr>
    }
}

/// Withheld data, said once above the table, with the reveal form when there is something to
/// reveal.
fn withheld_note(id: String, csrf: String, sheet: &CommandSheet) -> impl IntoView + use<> {
    let secrets = (sheet.secrets > 0).then(|| {
        view! {
            <p class="note" data-testid="secrets-withheld">
                {if sheet.secrets == 1 {
                    "1 value looks like a secret (a password, token or key): it never appears on this page; the executor receives it as sent.".to_owned()
                } else {
                    format!("{} values look like secrets (passwords, tokens or keys): they never appear on this page; the executor receives them as sent.", sheet.secrets)
                }}
            </p>
        }
    });
    let reveal = (sheet.withheld > 0).then(|| {
        view! {
            <form method="post" action=RevealPersonalData::url() class="reveal">
                <input type="hidden" name="csrf_token" value=csrf/>
                <input type="hidden" name="id" value=id.clone()/>
                <p class="note" data-testid="personal-withheld">
                    {plural(sheet.withheld, "personal-data value is", "personal-data values are")}
                    " hidden (GDPR/HIPAA). Revealing records your name and the fields in the audit trail."
                </p>
                <button type="submit" data-testid="reveal">"Reveal personal data"</button>
            </form>
        }
    });
    let revealed = (sheet.revealed > 0).then(|| {
        let href = format!("/proposals/{id}");
        view! {
            <p class="note" data-testid="personal-revealed">
                "Personal data shown because you revealed it (recorded in the audit trail). "
                <a href=href>"Hide it"</a>
            </p>
        }
    });
    view! { {secrets}{reveal}{revealed} }
}

/// The command section.
#[component]
pub fn CommandSection(id: String, csrf: String, sheet: CommandSheet) -> impl IntoView {
    let lead = if sheet.queued {
        "This is the command in the executor queue, field by field."
    } else {
        "Approving queues exactly this command, field by field; the approval sets the fields marked so."
    };
    let note = withheld_note(id, csrf, &sheet);
    let rows = sheet.rows.into_iter().map(field_row).collect_view();
    view! {
        <section class="command" id="command" aria-labelledby="command-h">
            <h2 id="command-h">"What the executor will receive"</h2>
            <p class="muted">{lead}</p>
            {note}
            <div class="scroll" tabindex="0" role="region" aria-label="The command, field by field">
                <table class="spec" data-testid="command-spec">
                    <caption class="sr-only">"Every field of the command, with nested values indented"</caption>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}
