//! Generates include/toolnexus.h from src/ffi with cbindgen. The header is
//! checked in; CI regenerates it and fails on any difference.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=src/ffi");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let part = |name: &str| env::var(name).expect("cargo sets the version parts");
    // The shared library's soname carries the major version (the cargo-c
    // convention): scripts/install.sh installs libtoolnexus.so.X.Y.Z with the
    // libtoolnexus.so.X and libtoolnexus.so links.
    if env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-soname,libtoolnexus.so.{}",
            part("CARGO_PKG_VERSION_MAJOR")
        );
    }
    let mut config =
        cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml is readable");
    config.after_includes = Some(format!(
        "\n#define TOOLNEXUS_VERSION \"{version}\"\n#define TOOLNEXUS_VERSION_MAJOR {}\n#define TOOLNEXUS_VERSION_MINOR {}\n#define TOOLNEXUS_VERSION_PATCH {}\n",
        part("CARGO_PKG_VERSION_MAJOR"),
        part("CARGO_PKG_VERSION_MINOR"),
        part("CARGO_PKG_VERSION_PATCH"),
    ));
    match cbindgen::Builder::new()
        .with_src(dir.join("src/ffi/mod.rs"))
        .with_config(config)
        .generate()
    {
        Ok(bindings) => {
            bindings.write_to_file(dir.join("include/toolnexus.h"));
        }
        Err(e) => panic!("cbindgen could not generate include/toolnexus.h: {e}"),
    }
}
