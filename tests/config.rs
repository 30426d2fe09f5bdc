//! Leptos.toml (read by the server at start) must agree with Cargo.toml's
//! `[[workspace.metadata.leptos]]` (read by cargo-leptos when it builds the site).

use countersign::config::Settings;

fn table(text: &str) -> toml::Table {
    text.parse().expect("valid TOML")
}

#[test]
fn leptos_toml_agrees_with_cargo_toml() {
    let cargo = table(include_str!("../Cargo.toml"));
    let leptos = table(include_str!("../Leptos.toml"));
    let build = &cargo["workspace"]["metadata"]["leptos"]
        .as_array()
        .expect("array")[0];
    let serve = &leptos["package"]["metadata"]["leptos"];
    assert_eq!(
        serve["output-name"].as_str(),
        build["name"].as_str(),
        "output-name vs name"
    );
    for key in [
        "site-root",
        "site-pkg-dir",
        "site-addr",
        "reload-port",
        "env",
    ] {
        assert_eq!(
            serve.get(key),
            build.get(key),
            "`{key}` differs between Leptos.toml and Cargo.toml"
        );
    }
}

#[test]
fn the_server_reads_leptos_toml() {
    let options = countersign::startup::leptos_options(&Settings::for_database("sqlite://x.db"))
        .expect("reads");
    assert_eq!(&*options.output_name, "countersign");
    assert_eq!(options.site_addr.to_string(), "127.0.0.1:3000");
    assert_eq!(&*options.site_pkg_dir, "pkg");
}
