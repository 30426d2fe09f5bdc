//! Nothing acknowledged is lost: the real server binary takes concurrent submissions and
//! pre-tool-checks, is killed with SIGKILL while they are in flight, and every request it had
//! answered is in the database afterwards, with an audit chain that still verifies.

mod common;

use common::{countersign, serve};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let (db, dir) = common::fresh_database("sqlite");
    let dir = dir.expect("temp dir");
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

    let (ack, mut acks) = tokio::sync::mpsc::unbounded_channel();
    let client = reqwest::Client::new();
    let mut agents = Vec::new();
    for _ in 0..16 {
        let (client, base, token, ack) = (client.clone(), base.clone(), token.clone(), ack.clone());
        agents.push(tokio::spawn(async move {
            loop {
                let body = common::proposal_body("agent-a");
                let sent = client
                    .post(format!("{base}/api/v1/proposals"))
                    .bearer_auth(&token)
                    .json(&body)
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().as_u16() == 201 => {
                        let _ = ack.send(body["proposal_id"].clone());
                    }
                    Ok(r) => panic!("unexpected answer {}", r.status()),
                    // The server is gone.
                    Err(_) => return,
                }
            }
        }));
    }
    drop(ack);
    // Kill once a few hundred answers are in, while requests are in flight.
    let mut acked = Vec::new();
    while acked.len() < 300 {
        acked.push(acks.recv().await.expect("answers"));
    }
    server.kill().expect("SIGKILL");
    server.wait().expect("reaped");
    for a in agents {
        a.await.expect("agent");
    }
    while let Ok(id) = acks.try_recv() {
        acked.push(id);
    }
    let served = serve(&db, &dir.path().join("audit.key"), "info");
    let (mut server, base) = (served.child, served.base);
    for id in &acked {
        let id = id.as_str().expect("id");
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
