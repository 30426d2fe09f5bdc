//! Leptos.toml (read by the server at start, and by scripts/build-site for what to write where)
//! agrees with how the server was compiled: the pages ask for the files the site build writes.

use countersign::config::Settings;
use leptos::prelude::*;

fn leptos_toml() -> toml::Table {
    include_str!("../Leptos.toml").parse().expect("valid TOML")
}

#[test]
fn the_server_is_compiled_with_leptos_toml_s_output_name() {
    // Leptos reads LEPTOS_OUTPUT_NAME at compile time (.cargo/config.toml sets it for every
    // build, this test's included): unset, the pages would ask for `<name>_bg.wasm`.
    let leptos = leptos_toml();
    assert_eq!(
        option_env!("LEPTOS_OUTPUT_NAME"),
        leptos["package"]["metadata"]["leptos"]["output-name"].as_str(),
        ".cargo/config.toml's LEPTOS_OUTPUT_NAME vs Leptos.toml's output-name"
    );
}

#[test]
fn the_pages_load_the_files_build_site_writes() {
    // scripts/build-site writes <site-pkg-dir>/<output-name>.js and .wasm.
    let options = countersign::startup::leptos_options(&Settings::for_database("sqlite://x.db"))
        .expect("reads");
    let html = Owner::new().with(|| view! { <HydrationScripts options/> }.to_html());
    for file in ["/pkg/countersign.js", "/pkg/countersign.wasm"] {
        assert!(
            html.contains(&format!("href=\"{file}\"")),
            "{file} in {html}"
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
