//! Reaching the right people, against a real SMTP server on loopback (started here, speaking
//! the protocol to `lettre`): each reviewer who may decide a proposal gets one email and no
//! parameter value, others none; a flood folds into one digest per reviewer; a proposal about
//! to expire is announced once; an escalation fires after its window, is audited, reaches its
//! tier by email, and lets the tier decide outside their domains.

use countersign::domain::principal::Principal;
use std::time::Duration;

use countersign::domain::principal::Role;
use countersign::service::{Mailer, NotifySettings};
use reqwest::StatusCode;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::common::on_both_backends;
use crate::helpers::{PASSWORD, TestApp};
use crate::webhooks::recorded;

on_both_backends!(
    each_reviewer_who_may_decide_gets_one_email_and_a_flood_folds,
    expiry_is_announced_once_and_escalation_reaches_its_tier,
);

/// One message as the SMTP server took it.
#[derive(Debug)]
pub(crate) struct Mail {
    pub(crate) to: Vec<String>,
    pub(crate) subject: String,
    pub(crate) body: String,
}

/// An SMTP server on loopback that accepts every message and hands it over.
pub(crate) async fn smtp_server() -> (String, mpsc::UnboundedReceiver<Mail>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(smtp_session(socket, tx.clone()));
        }
    });
    (format!("smtp://{addr}"), rx)
}

async fn smtp_session(socket: tokio::net::TcpStream, tx: mpsc::UnboundedSender<Mail>) {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    let _ = write.write_all(b"220 loopback ESMTP\r\n").await;
    let mut to = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let verb = line.to_ascii_uppercase();
        let answer: &[u8] = if verb.starts_with("EHLO") {
            b"250-loopback\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n"
        } else if verb.starts_with("RCPT TO:") {
            to.push(line[8..].trim().trim_matches(['<', '>']).to_owned());
            b"250 ok\r\n"
        } else if verb == "DATA" {
            let _ = write.write_all(b"354 go on\r\n").await;
            let mut data = Vec::new();
            while let Ok(Some(l)) = lines.next_line().await {
                if l == "." {
                    break;
                }
                data.push(l.strip_prefix('.').map_or(l.clone(), str::to_owned));
            }
            let _ = tx.send(parse(std::mem::take(&mut to), &data));
            b"250 taken\r\n"
        } else if verb == "QUIT" {
            let _ = write.write_all(b"221 bye\r\n").await;
            return;
        } else {
            b"250 ok\r\n"
        };
        let _ = write.write_all(answer).await;
    }
}

/// The subject and the decoded plain-text body of a message.
fn parse(to: Vec<String>, data: &[String]) -> Mail {
    let split = data.iter().position(String::is_empty).unwrap_or(data.len());
    let (headers, body) = data.split_at(split);
    let header = |name: &str| {
        headers
            .iter()
            .find_map(|h| h.strip_prefix(&format!("{name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    let raw = body.get(1..).unwrap_or_default();
    let body = if header("Content-Transfer-Encoding") == "quoted-printable" {
        quoted_printable(raw)
    } else {
        raw.join("\n")
    };
    Mail {
        to,
        subject: header("Subject"),
        body,
    }
}

fn quoted_printable(lines: &[String]) -> String {
    let mut bytes = Vec::new();
    for line in lines {
        let (text, soft) = match line.strip_suffix('=') {
            Some(t) => (t, true),
            None => (line.as_str(), false),
        };
        let mut chars = text.bytes();
        while let Some(b) = chars.next() {
            if b == b'=' {
                let hex: Vec<u8> = chars.by_ref().take(2).collect();
                let hex = std::str::from_utf8(&hex).expect("hex");
                bytes.push(u8::from_str_radix(hex, 16).expect("hex"));
            } else {
                bytes.push(b);
            }
        }
        if !soft {
            bytes.push(b'\n');
        }
    }
    String::from_utf8(bytes).expect("utf-8")
}

pub(crate) async fn next_mail(rx: &mut mpsc::UnboundedReceiver<Mail>) -> Mail {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("an email arrived")
        .expect("server open")
}

pub(crate) fn email_settings(smtp: &str) -> NotifySettings {
    NotifySettings {
        public_url: Some("https://countersign.example.com/".parse().expect("url")),
        mailer: Some(Mailer::new(smtp, "Countersign <cs@example.com>").expect("mailer")),
        ..NotifySettings::default()
    }
}

/// A person with an address, limited to `domains` when given.
pub(crate) async fn person(app: &TestApp, name: &str, role: Role, domains: Option<&[&str]>) {
    app.user(name, role).await;
    let actor = Principal::Operator;
    if let Some(domains) = domains {
        let domains = domains.iter().map(|d| (*d).to_owned()).collect();
        app.services
            .set_domains(&actor, name, Some(domains))
            .await
            .expect("domains");
    }
    let address = format!("{name}@example.com");
    app.services
        .set_email(&actor, name, Some(&address))
        .await
        .expect("email");
}

async fn each_reviewer_who_may_decide_gets_one_email_and_a_flood_folds(backend: &str) {
    let (smtp, mut inbox) = smtp_server().await;
    let app = TestApp::spawn_configured(backend, |s| s.notify = email_settings(&smtp)).await;
    person(&app, "rob", Role::Reviewer, None).await;
    person(&app, "sam", Role::Reviewer, Some(&["sales"])).await;
    person(&app, "cleo", Role::Reviewer, Some(&["crm"])).await;
    person(&app, "cora", Role::Compliance, None).await;
    app.user("ann", Role::Admin).await; // no address
    let mut sends = app.services.store().changes().notification_sends();
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;

    recorded(&mut sends, 2).await;
    let mut got: Vec<Mail> = vec![next_mail(&mut inbox).await, next_mail(&mut inbox).await];
    got.sort_by(|a, b| a.to.cmp(&b.to));
    let to: Vec<&str> = got.iter().flat_map(|m| &m.to).map(String::as_str).collect();
    assert_eq!(
        to,
        ["rob@example.com", "sam@example.com"],
        "who may decide, once each"
    );
    let mail = &got[0];
    assert_eq!(
        mail.subject,
        "[Countersign] Approval needed: sales-agent wants crm.update_contact"
    );
    for fact in [
        "Risk: medium",
        "Route: ask",
        "human_approval_required",
        "Expires: in",
    ] {
        assert!(mail.body.contains(fact), "names {fact}: {}", mail.body);
    }
    let link = format!("https://countersign.example.com/proposals/{id}");
    assert!(mail.body.contains(&link), "{}", mail.body);
    for value in ["c-123", "new@example.com"] {
        assert!(
            !mail.body.contains(value),
            "no parameter value: {}",
            mail.body
        );
    }
    // Opening the link decides nothing.
    let browser = app.browser();
    browser.login("rob", PASSWORD).await;
    assert_eq!(
        browser.get(&format!("/proposals/{id}")).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "pending"
    );

    // A flood within the window: one digest per reviewer when it ends.
    for _ in 0..4 {
        app.propose_ok(&agent, "sales-agent").await;
    }
    app.services.deliver_notifications().await.expect("deliver");
    assert!(
        inbox.try_recv().is_err(),
        "one email per reviewer per window"
    );
    app.clock.advance(time::Duration::seconds(61));
    app.services.deliver_notifications().await.expect("deliver");
    recorded(&mut sends, 4).await;
    for _ in 0..2 {
        let digest = next_mail(&mut inbox).await;
        assert_eq!(digest.subject, "[Countersign] 4 proposals need a person");
        assert!(
            digest.body.contains("4 crm.update_contact"),
            "{}",
            digest.body
        );
    }
    assert!(inbox.try_recv().is_err());
    let listed = app
        .services
        .recent_notifications(&Principal::Operator, 50)
        .await
        .expect("list");
    assert!(
        listed
            .iter()
            .any(|n| n.recipient == "rob" && n.state == "sent")
    );
    assert!(
        listed
            .iter()
            .all(|n| n.recipient != "cleo" && n.recipient != "cora")
    );
}

const ESCALATING: &str = r#"
[defaults]
unknown_agents = "allow"
expiry = "2h"
escalate_after = "30m"
escalate_to = ["cleo", "admin"]
"#;

async fn expiry_is_announced_once_and_escalation_reaches_its_tier(backend: &str) {
    let (smtp, mut inbox) = smtp_server().await;
    let app = TestApp::spawn_full(backend, Some(ESCALATING), |s| {
        s.notify = email_settings(&smtp);
    })
    .await;
    person(&app, "sam", Role::Reviewer, Some(&["sales"])).await;
    person(&app, "cleo", Role::Reviewer, Some(&["crm"])).await;
    let mut sends = app.services.store().changes().notification_sends();
    let agent = app.agent_token("sales-agent").await;
    let id = app.propose_ok(&agent, "sales-agent").await;
    recorded(&mut sends, 1).await;
    assert_eq!(next_mail(&mut inbox).await.to, ["sam@example.com"]);

    // Cleo reviews crm only: she neither sees nor decides it yet.
    let cleo = app.browser();
    cleo.login("cleo", PASSWORD).await;
    let page = format!("/proposals/{id}");
    assert_eq!(cleo.get(&page).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(app.services.raise_alerts().await.expect("sweep"), 0);

    // Thirty minutes on, nobody decided: the first tier hears, once.
    app.clock.advance(time::Duration::minutes(31));
    assert_eq!(app.services.raise_alerts().await.expect("sweep"), 1);
    assert_eq!(
        app.services.raise_alerts().await.expect("sweep"),
        0,
        "once per tier"
    );
    let escalated = app
        .count("select count(*) from audit_events where action = 'proposal.escalated'")
        .await;
    assert_eq!(escalated, 1);
    app.services.deliver_notifications().await.expect("deliver");
    recorded(&mut sends, 2).await;
    let mail = next_mail(&mut inbox).await;
    assert_eq!(
        mail.to,
        ["cleo@example.com"],
        "the tier, not the domain's reviewers"
    );
    assert!(mail.subject.contains("Escalated"), "{}", mail.subject);
    assert!(mail.body.contains("Escalated to: cleo"), "{}", mail.body);

    // One hour fifty on: about to expire (15 minutes' warning), and the second tier is due.
    app.clock.advance(time::Duration::minutes(79));
    assert_eq!(app.services.raise_alerts().await.expect("sweep"), 2);
    assert_eq!(
        app.services.raise_alerts().await.expect("sweep"),
        0,
        "warned once"
    );

    // The page shows the escalations; the tier decides outside her domains (signed in again:
    // her session went idle meanwhile).
    let cleo = app.browser();
    cleo.login("cleo", PASSWORD).await;
    let html = cleo.page(&page).await;
    assert!(
        html.contains("data-testid=\"proposal-escalations\""),
        "{html}"
    );
    assert!(
        html.contains("Escalated to <strong>cleo</strong>"),
        "{html}"
    );
    let r = cleo.decide(&id, "approved", None).await;
    assert!(r.status().is_redirection(), "{}", r.status());
    assert_eq!(
        app.poll(&agent, &id).await.1["proposal"]["status"],
        "approved"
    );
}
