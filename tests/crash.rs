//! Nothing acknowledged is lost: the real server binary takes concurrent submissions and
//! pre-tool-checks, is killed with SIGKILL while they are in flight, and every request it had
//! answered is in the database afterwards, with an audit chain that still verifies.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command as Process, Stdio};

use assert_cmd::cargo::CommandCargoExt;
use serde_json::json;

fn countersign(db: &str) -> Process {
    let mut cmd = Process::cargo_bin("countersign").expect("binary");
    cmd.env("COUNTERSIGN_DATABASE_URL", db)
        .env_remove("RUST_LOG")
        .env("COUNTERSIGN_LOG_FORMAT", "json");
    cmd
}

/// Starts `serve` on a free port and returns it once it listens. Its log (stderr) is read to
/// the end on a thread of its own, so the server never blocks on a full pipe.
fn serve(db: &str, key: &std::path::Path) -> (Child, String) {
    let mut child = countersign(db)
        .args(["serve", "--bind", "127.0.0.1:0", "--audit-key"])
        .arg(key)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let log = BufReader::new(child.stderr.take().expect("stderr"));
    let (found, addr) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in log.lines().map_while(Result::ok) {
            if line.contains("Countersign is serving")
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&line)
                && let Some(addr) = v["fields"]["addr"].as_str()
            {
                let _ = found.send(addr.to_owned());
            }
        }
    });
    let addr = addr.recv().expect("the server exited before listening");
    (child, format!("http://{addr}"))
}

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
    let (mut server, base) = serve(&db, &dir.path().join("audit.key"));

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
    let (mut server, base) = serve(&db, &dir.path().join("audit.key"));
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
