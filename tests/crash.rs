//! Nothing acknowledged is lost: the real server binary takes concurrent submissions and
//! pre-tool-checks (and, in the second test, leases and reports), is killed with SIGKILL while they are in flight, and
//! every request it had answered is in the database afterwards, with an audit chain that still
//! verifies. On both backends.

mod common;

use common::{countersign, serve};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    for backend in ["sqlite", "postgres"] {
        submissions_survive_sigkill(backend).await;
    }
}

async fn submissions_survive_sigkill(backend: &str) {
    let (db, _db_dir) = common::fresh_database(backend);
    let dir = tempfile::tempdir().expect("key dir");
    common::run_ok(&db, &["migrate"], None);
    let out = countersign(&db)
        .args(["token", "create", "--agent", "agent-a"])
        .output()
        .expect("token");
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned();
    let served = serve(&db, &dir.path().join("audit.key"), "info");
    let (mut server, base) = (served.child, served.base);

    // Half the agents submit proposals, half ask pre-tool-checks (whose one write is their
    // audit row): every answered check must have its row after the kill.
    let (ack, mut acks) = tokio::sync::mpsc::unbounded_channel::<(bool, String)>();
    let client = reqwest::Client::new();
    let mut agents = Vec::new();
    for i in 0..16 {
        let (client, base, token, ack) = (client.clone(), base.clone(), token.clone(), ack.clone());
        let checks = i % 2 == 1;
        agents.push(tokio::spawn(async move {
            loop {
                let (path, body, created) = if checks {
                    ("pre-tool-check", common::check_body(), 200)
                } else {
                    ("proposals", common::proposal_body("agent-a"), 201)
                };
                let sent = client
                    .post(format!("{base}/api/v1/{path}"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().as_u16() == created => {
                        let id = if checks {
                            match r.json::<serde_json::Value>().await {
                                Ok(answer) => answer["check_id"].as_str().map(str::to_owned),
                                // Killed between the head and the body: not acknowledged.
                                Err(_) => return,
                            }
                        } else {
                            body["proposal_id"].as_str().map(str::to_owned)
                        };
                        let _ = ack.send((checks, id.expect("an id")));
                    }
                    Ok(r) => panic!("unexpected answer {}", r.status()),
                    // The server is gone.
                    Err(_) => return,
                }
            }
        }));
    }
    drop(ack);
    // Kill once a few hundred answers of each kind are in, while requests are in flight.
    let (mut proposals, mut checks) = (Vec::new(), Vec::new());
    while proposals.len() < 200 || checks.len() < 200 {
        match acks.recv().await.expect("answers") {
            (true, id) => checks.push(id),
            (false, id) => proposals.push(id),
        }
    }
    server.kill().expect("SIGKILL");
    server.wait().expect("reaped");
    for a in agents {
        a.await.expect("agent");
    }
    while let Ok((check, id)) = acks.try_recv() {
        if check {
            checks.push(id)
        } else {
            proposals.push(id)
        }
    }
    let listed = checks
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    let recorded = common::count(
        &db,
        &format!(
            "select count(*) from audit_events where action = 'pre_tool_check.decided' \
             and subject_type = 'pre_tool_check' and subject_id in ({listed})"
        ),
    )
    .await;
    assert_eq!(
        usize::try_from(recorded).expect("count"),
        checks.len(),
        "an answered pre-tool-check lost its audit row"
    );
    let served = serve(&db, &dir.path().join("audit.key"), "info");
    let (mut server, base) = (served.child, served.base);
    for id in &proposals {
        let r = client
            .get(format!("{base}/api/v1/proposals/{id}"))
            .bearer_auth(&token)
            .send()
            .await
            .expect("poll");
        assert_eq!(
            r.status().as_u16(),
            200,
            "acknowledged proposal {id} was lost"
        );
        let v: serde_json::Value = r.json().await.expect("json");
        assert_eq!(v["proposal"]["status"], json!("pending"));
    }
    server.kill().expect("stop");
    server.wait().expect("reaped");
    let verify = countersign(&db)
        .args(["audit", "verify"])
        .output()
        .expect("verify");
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stderr)
    );
}

/// Issue 9: eight executors lease and complete over HTTP while the server is killed with
/// SIGKILL. After a restart every acknowledged completion is `succeeded`, every acknowledged
/// lease is still held by its executor (its token completes it; nobody else is handed it), and
/// the trail verifies. On both backends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_leases_and_reports_survive_sigkill() {
    for backend in ["sqlite", "postgres"] {
        leases_survive_sigkill(backend).await;
    }
}

/// What the executors had acknowledged when the server died.
#[derive(Default)]
struct Acked {
    /// Leased and not (acknowledged as) completed: command id → (proposal id, lease token).
    held: std::collections::HashMap<String, (String, String)>,
    /// Completed: proposal ids.
    done: Vec<String>,
}

async fn leases_survive_sigkill(backend: &str) {
    let (db, dir) = common::fresh_database(backend);
    let keys = tempfile::tempdir().expect("key dir");
    let run = |args: &[&str], stdin: Option<&str>| common::run_ok(&db, args, stdin);
    run(&["migrate"], None);
    let agent = run(&["token", "create", "--agent", "agent-a"], None);
    let executor = common::executor_token(&db, "n8n");
    let agent = agent.trim().to_owned();
    let password = "correct horse battery staple";
    common::add_reviewer(&db, "rita", password);
    let key = keys.path().join("audit.key");
    let served = serve(&db, &key, "info");
    let (mut server, base) = (served.child, served.base);
    let client = reqwest::Client::new();
    let reviewer = common::browser::Browser::new(&base);
    assert!(
        reviewer
            .login("rita", password)
            .await
            .status()
            .is_redirection()
    );
    for _ in 0..120 {
        let body = common::proposal_body("agent-a");
        let r = client
            .post(format!("{base}/api/v1/proposals"))
            .bearer_auth(&agent)
            .json(&body)
            .send()
            .await
            .expect("submit");
        assert_eq!(r.status().as_u16(), 201);
        let id = body["proposal_id"].as_str().expect("id");
        assert!(
            reviewer
                .decide(id, "approved", None)
                .await
                .status()
                .is_redirection()
        );
    }

    let acked = std::sync::Arc::new(std::sync::Mutex::new(Acked::default()));
    let (tick, mut ticks) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut executors = Vec::new();
    for _ in 0..8 {
        let (client, base, token) = (client.clone(), base.clone(), executor.clone());
        let (acked, tick) = (acked.clone(), tick.clone());
        executors.push(tokio::spawn(async move {
            while let Some((command, proposal, lease_token)) = lease(&client, &base, &token).await {
                acked
                    .lock()
                    .expect("acked")
                    .held
                    .insert(command.clone(), (proposal.clone(), lease_token.clone()));
                let done = client
                    .post(format!(
                        "{base}/api/v1/executor/commands/{command}/complete"
                    ))
                    .bearer_auth(&token)
                    .json(&json!({"lease_token": lease_token, "result": {"ok": true}}))
                    .send()
                    .await;
                match done {
                    Ok(r) if r.status().as_u16() == 200 => {
                        let mut acked = acked.lock().expect("acked");
                        acked.held.remove(&command);
                        acked.done.push(proposal);
                        let _ = tick.send(());
                    }
                    Ok(r) => panic!("complete answered {}", r.status()),
                    // The server is gone: the lease stays acknowledged, the report is not.
                    Err(_) => return,
                }
            }
        }));
    }
    drop(tick);
    // Kill once a few dozen reports are in, with leases and reports in flight.
    for _ in 0..40 {
        ticks.recv().await.expect("reports");
    }
    server.kill().expect("SIGKILL");
    server.wait().expect("reaped");
    for e in executors {
        e.await.expect("executor");
    }
    let acked = std::mem::take(&mut *acked.lock().expect("acked"));

    let served = serve(&db, &key, "info");
    let (mut server, base) = (served.child, served.base);
    for proposal in &acked.done {
        assert_eq!(
            status(&client, &base, &agent, proposal).await,
            "succeeded",
            "{backend}: acknowledged report on {proposal} was lost"
        );
    }
    // Nobody else is handed a command whose lease was acknowledged...
    let mut others = Vec::new();
    while let Some((command, _, _)) = lease(&client, &base, &executor).await {
        assert!(
            !acked.held.contains_key(&command),
            "{backend}: acknowledged lease on {command} was handed out again"
        );
        others.push(command);
    }
    // (At most one lease per executor was committed with its answer lost in flight.)
    let seen = acked.done.len() + acked.held.len() + others.len();
    assert!(
        (112..=120).contains(&seen),
        "{backend}: {seen} commands seen"
    );
    // ...and its holder still completes it with the token it was given, unless its report
    // had landed with the answer lost in flight.
    for (command, (proposal, lease_token)) in &acked.held {
        let r = client
            .post(format!(
                "{base}/api/v1/executor/commands/{command}/complete"
            ))
            .bearer_auth(&executor)
            .json(&json!({"lease_token": lease_token, "result": {"ok": true}}))
            .send()
            .await
            .expect("complete");
        if r.status().as_u16() != 200 {
            assert_eq!(r.status().as_u16(), 409, "{backend}: lease on {command}");
            assert_eq!(
                status(&client, &base, &agent, proposal).await,
                "succeeded",
                "{backend}: lease on {command} was lost"
            );
        }
    }
    server.kill().expect("stop");
    server.wait().expect("reaped");
    let verify = countersign(&db)
        .args(["audit", "verify"])
        .output()
        .expect("verify");
    assert!(
        verify.status.success(),
        "{backend}: {}",
        String::from_utf8_lossy(&verify.stderr)
    );
    drop(dir);
}

/// One lease with a 60 s lease: `(command id, proposal id, lease token)`, or `None` when the
/// queue is empty or the server is gone.
async fn lease(
    client: &reqwest::Client,
    base: &str,
    token: &str,
) -> Option<(String, String, String)> {
    let r = client
        .post(format!("{base}/api/v1/executor/lease"))
        .bearer_auth(token)
        .json(&json!({"lease_seconds": 60}))
        .send()
        .await
        .ok()?;
    if r.status().as_u16() == 204 {
        return None;
    }
    assert_eq!(r.status().as_u16(), 200, "lease");
    let v: serde_json::Value = r.json().await.ok()?;
    let s = |p: &str| v.pointer(p).and_then(|x| x.as_str()).map(str::to_owned);
    Some((
        s("/command/id")?,
        s("/command/proposal_id")?,
        s("/lease_token")?,
    ))
}

/// A proposal's status as its agent polls it.
async fn status(client: &reqwest::Client, base: &str, agent: &str, proposal: &str) -> String {
    let v: serde_json::Value = client
        .get(format!("{base}/api/v1/proposals/{proposal}"))
        .bearer_auth(agent)
        .send()
        .await
        .expect("poll")
        .json()
        .await
        .expect("json");
    v["proposal"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
